package ops

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// DeferBatch is how many tasks one transaction of a deferral over a span
// changes: more than Batch, since a deferral of READY tasks names them by
// runs of sequences, mostly one run per page, and each page costs a read
// and a transaction (40,000 tasks on PostgreSQL: 1.1 to 1.8 s in pages of
// 1,000, 0.85 s in pages of 5,000).
const DeferBatch = 5 * Batch

// DeferSpan defers every READY task of topic within span until until (zero:
// pollable at once), DeferBatch tasks a transaction, leaving out those that
// consumers claim meanwhile, and returns how many it deferred.
func DeferSpan(ctx context.Context, s Store, topic string, until time.Time, span taskapi.Range) (int64, error) {
	var n int64
	ready := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
	for cursor := span.From - 1; ; {
		infos, err := s.Page(ctx, topic, ready, max(cursor, taskapi.Inception), DeferBatch, taskapi.Forward)
		if err != nil {
			return n, err
		}
		tasks := make([]taskapi.Task, 0, len(infos))
		for _, info := range infos {
			if info.Sequence <= span.To {
				tasks = append(tasks, info.Task)
			}
		}
		done, err := DeferReady(ctx, s, topic, until, tasks)
		if n += int64(done); err != nil || len(tasks) < DeferBatch {
			return n, err
		}
		cursor = tasks[len(tasks)-1].Sequence
	}
}

// DeferReady defers tasks that were READY when paged, leaving out those a
// consumer claimed meanwhile (the StateError names them), and returns how
// many it deferred.
func DeferReady(ctx context.Context, s Store, topic string, until time.Time, tasks []taskapi.Task) (int, error) {
	for len(tasks) > 0 {
		err := s.Defer(ctx, topic, until, tasks)
		var stateErr *taskapi.StateError
		if !errors.As(err, &stateErr) {
			return len(tasks), err
		}
		before := len(tasks)
		tasks = slices.DeleteFunc(tasks, func(t taskapi.Task) bool {
			return slices.Contains(stateErr.Sequences, t.Sequence)
		})
		if len(tasks) == before {
			return 0, err
		}
	}
	return 0, nil
}
