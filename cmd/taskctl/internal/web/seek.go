package web

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A topic's page finds where a window of creation times starts by a binary
// search over the topic's sequences, one primary-key probe a step (some 20
// for a million tasks), rather than with PageAt, whose exact answer reads
// every task created after the time on the BRIN index of creation times
// (hundreds of milliseconds in the middle of a million tasks). Sequences
// follow creation times, up to the skew of pushes that run side by side
// (milliseconds); the page then keeps only the tasks inside the window.

// probe returns the task of topic nearest seq in direction: the first at
// or after seq going Forward, the last at or before it going Backward.
func probe(ctx context.Context, store Store, topic string, seq int64, direction taskapi.Direction) (taskapi.Info, bool, error) {
	cursor := seq - 1
	if direction == taskapi.Backward {
		cursor = seq + 1
	}
	page, err := store.Page(ctx, topic, taskapi.Listing{}, max(cursor, taskapi.Inception), 1, direction)
	if err != nil || len(page) == 0 {
		return taskapi.Info{}, false, err
	}
	return page[0], true, nil
}

// seek returns the cursor of a page of topic that starts at t: going
// Forward, before the first task created at or after t; going Backward,
// after the last task created at or before t. ok is false when no task
// lies on that side of t.
func seek(ctx context.Context, store Store, topic string, t time.Time, direction taskapi.Direction) (cursor int64, ok bool, err error) {
	first, found, err := probe(ctx, store, topic, taskapi.Inception, taskapi.Forward)
	if err != nil || !found {
		return 0, false, err
	}
	last, _, err := probe(ctx, store, topic, taskapi.MaxSequence-1, taskapi.Backward)
	if err != nil {
		return 0, false, err
	}
	// inside says whether the task nearest seq lies on the far side of t.
	inside := func(seq int64) (taskapi.Info, bool, error) {
		info, _, err := probe(ctx, store, topic, seq, direction)
		if direction == taskapi.Forward {
			return info, !info.Created.Before(t), err
		}
		return info, !info.Created.After(t), err
	}
	low, high := first.Sequence, last.Sequence
	for low < high && err == nil {
		var in bool
		if direction == taskapi.Forward { // the lowest sequence inside
			mid := low + (high-low)/2
			if _, in, err = inside(mid); in {
				high = mid
			} else {
				low = mid + 1
			}
		} else { // the highest sequence inside
			mid := low + (high-low+1)/2
			if _, in, err = inside(mid); in {
				low = mid
			} else {
				high = mid - 1
			}
		}
	}
	if err != nil {
		return 0, false, err
	}
	info, in, err := inside(low)
	if err != nil || !in {
		return 0, false, err
	}
	if direction == taskapi.Forward {
		return info.Sequence - 1, true, nil
	}
	return info.Sequence + 1, true, nil
}
