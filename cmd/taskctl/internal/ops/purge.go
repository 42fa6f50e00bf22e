package ops

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// PurgeChunks is how many statements a purge is cut into at most, so that
// no statement holds its locks for long and progress can show; a purge of
// few tasks is cut into fewer, one per PurgeChunkTasks tasks counted, as
// each statement is a transaction of its own (a purge of 500 tasks in 100
// statements took a second).
const (
	PurgeChunks     = 100
	PurgeChunkTasks = 5000
)

// Before narrows span to the tasks of topic below its first task created
// after cutoff; a zero cutoff leaves it. It reads that topic alone
// (PageAt), not every topic as Resolve would: every task of the topic
// below that sequence was created at or before cutoff, whatever other
// topics hold.
func Before(ctx context.Context, s Store, topic string, span taskapi.Range, cutoff time.Time) (taskapi.Range, error) {
	if cutoff.IsZero() {
		return span, nil
	}
	next, err := s.PageAt(ctx, topic, taskapi.Listing{}, cutoff.Add(time.Microsecond), 1, taskapi.Forward)
	if err != nil || len(next) == 0 {
		return span, err
	}
	span.To = min(span.To, next[0].Sequence-1)
	return span, nil
}

// Purgeable counts the tasks of topic within span in states (PurgedStates
// when none) that a purge would delete, and returns the lowest and highest
// of their sequences.
func Purgeable(ctx context.Context, s Store, topic string, span taskapi.Range, states []taskapi.State) (n, first, last int64, err error) {
	if span.Empty() {
		return 0, 0, 0, nil
	}
	if len(states) == 0 {
		states = PurgedStates
	}
	counts, err := s.Count(ctx, taskapi.Total, taskapi.Counting{Topic: topic, States: states}, span)
	if err != nil || len(counts[topic]) == 0 {
		return 0, 0, 0, err
	}
	for _, sum := range counts[topic] {
		n, last = n+sum.Count, max(last, sum.Bound)
	}
	page, err := s.Page(ctx, topic, taskapi.Listing{States: states}, max(span.From-1, taskapi.Inception), 1, taskapi.Forward)
	if err != nil || len(page) == 0 {
		return n, 0, 0, err
	}
	return n, page[0].Sequence, last, nil
}

// PurgeChunked purges span of topic, the tasks completed at or before
// completedBy (zero: whenever), in statements of about PurgeChunkTasks of the
// n tasks counted there, PurgeChunks at most, calling progress with the
// tasks each deleted, and returns how many went: those before an error
// too.
func PurgeChunked(ctx context.Context, s Store, topic string, span taskapi.Range, states []taskapi.State, completedBy time.Time, n int64, progress func(int64)) (int64, error) {
	chunks := min(max(n/PurgeChunkTasks+1, 1), PurgeChunks)
	width := max((span.To-span.From)/chunks+1, 1)
	var purged int64
	for from := span.From; from <= span.To; from += width {
		chunk := taskapi.Range{From: from, To: min(from+width-1, span.To)}
		k, err := s.PurgeCompletedBy(ctx, topic, chunk, completedBy, states)
		purged += k
		if err != nil {
			return purged, err
		}
		progress(k)
		if chunk.To == span.To {
			break
		}
	}
	return purged, nil
}
