package main

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// orderedWorkers is how many tasks the ordered mix runs at once.
const orderedWorkers = 4

// ordered is the mix of the order test: each task in a transaction of its
// own that records its effect (ParallelTx), the tasks of an identifier one
// after the other in sequence order (SingularByIdentifier), as
// docs/processing.md shows. The test checks that the effects of each
// identifier commit in sequence order, also across the crashes of the
// processes that run them.
func ordered(owner string, work time.Duration) (taskproc.Handler, []taskproc.ClientOption) {
	handler := taskproc.ParallelTx(orderedWorkers, func(ctx context.Context, tx taskpg.DB, task taskapi.Task) (taskapi.Decision, error) {
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return taskapi.Decision{}, ctx.Err()
		}
		_, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
			task.Identifier, task.Sequence, owner)
		return taskapi.Decision{Result: taskapi.Success, Output: owner}, err
	})
	return handler, []taskproc.ClientOption{taskproc.WithCondition(taskapi.SingularByIdentifier)}
}
