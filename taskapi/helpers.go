package taskapi

import (
	"context"
	"time"
)

// PollOne polls a single task. It reports false when no task was ready.
func PollOne[Tx any](ctx context.Context, src Source[Tx], tx Tx, topic string, opts ...PollOption) (Task, bool, error) {
	tasks, err := src.Poll(ctx, tx, topic, 1, opts...)
	if err != nil || len(tasks) == 0 {
		return Task{}, false, err
	}
	return tasks[0], true, nil
}

// PurgeBefore purges, in the default states Failed to Redundant, every task
// of topic created at or before t.
func PurgeBefore[Tx any](ctx context.Context, repo Repository[Tx], tx Tx, topic string, t time.Time) (int64, error) {
	last, err := repo.Resolve(ctx, tx, t, true)
	if err != nil || last == Inception {
		return 0, err
	}
	return repo.Purge(ctx, tx, topic, Range{From: Inception, To: last})
}

// PageAt pages tasks of topic from a point in time: going Forward from the
// first task created at or after t, going Backward from the last task created
// at or before t.
func PageAt[Tx any](ctx context.Context, repo Repository[Tx], tx Tx, topic string, listing Listing, t time.Time, size int, direction Direction) ([]Info, error) {
	preceding := direction == Backward
	at, err := repo.Resolve(ctx, tx, t, preceding)
	if err != nil {
		return nil, err
	}
	switch {
	case preceding && at == Inception, !preceding && at == MaxSequence:
		return nil, nil
	case preceding:
		return repo.Page(ctx, tx, topic, listing, at+1, size, direction)
	default:
		return repo.Page(ctx, tx, topic, listing, at-1, size, direction)
	}
}
