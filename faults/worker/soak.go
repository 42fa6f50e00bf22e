package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// soakOptions retry a flaky task a few times, quickly, so that a soak sees
// tasks run out of attempts as well as succeed on a later one.
var soakOptions = []taskproc.ClientOption{taskproc.WithRetry(taskproc.RetryPolicy{
	MaxAttempts: 3,
	Backoff:     taskproc.ExponentialBackoff(50*time.Millisecond, 400*time.Millisecond),
})}

// fates are the decisions a soak task's input asks for. A flaky task fails
// transiently half of its runs; a sleepy one snoozes half of its runs.
var fates = map[string]taskapi.Result{
	"success": taskapi.Success, "filter": taskapi.Filter,
	"suspend": taskapi.Suspension, "fail": taskapi.Failure,
	"flaky": taskapi.Success, "sleepy": taskapi.Success,
}

// soak works for up to work, then decides every task as its input asks and
// records in the completing transaction one effect row per task, with
// what became of it: its result, RETRY or SNOOZE.
func soak(owner string, work time.Duration) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		select {
		case <-time.After(rand.N(work + 1)):
		case <-ctx.Done():
			return ctx.Err()
		}
		decisions, became := taskproc.Decisions{}, map[taskapi.Task]string{}
		for _, task := range b.Tasks() {
			what, err := soakDecide(b, task, decisions)
			if err != nil {
				return err
			}
			became[task] = what
		}
		return taskproc.CompleteTx(b, func(ctx context.Context, tx taskpg.DB) (taskproc.Decisions, error) {
			for task, what := range became {
				if _, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner, result) VALUES ($1, $2, $3, $4)",
					task.Identifier, task.Sequence, owner, what); err != nil {
					return nil, err
				}
			}
			return decisions, nil
		})
	})
}

// soakDecide decides task into decisions, or marks it in b to be retried
// or snoozed (before the batch is completed), and returns what it did.
func soakDecide(b *taskproc.Batch, task taskapi.Task, decisions taskproc.Decisions) (string, error) {
	result, ok := fates[task.Input]
	if !ok {
		return "", errors.New("soak: a task without a fate: " + task.Input)
	}
	decisions[task] = taskapi.Decision{Result: result, Output: task.Input}
	switch {
	case task.Input == "flaky" && rand.IntN(2) == 0:
		return "RETRY", b.Retry(task, errors.New("flaky"))
	case task.Input == "sleepy" && rand.IntN(2) == 0:
		return "SNOOZE", b.Snooze(task, time.Duration(50+rand.IntN(250))*time.Millisecond)
	}
	return result.String(), nil
}
