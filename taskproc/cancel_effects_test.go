package taskproc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// completeWithEffects completes b with CompleteTx: an effect row and a
// Success for each of tasks, written through the completion's transaction.
func completeWithEffects[Tx any](e *env[Tx], b *taskproc.Batch, tasks func() []taskapi.Task) error {
	return taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
		d := taskproc.Decisions{}
		for _, task := range tasks() {
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return nil, err
			}
			d[task] = taskapi.Decision{Result: taskapi.Success}
		}
		return d, nil
	})
}

// cancelledEffects checks that every task of tasks ended Cancelled with
// no effect row or Succeeded with exactly one, and returns how many were
// cancelled.
func cancelledEffects[Tx any](e *env[Tx], tasks []taskapi.Task) int {
	e.t.Helper()
	cancelled := 0
	for _, task := range tasks {
		info, n := e.info(task), e.effectRows(task)
		switch {
		case info.State == taskapi.Cancelled && n == 0:
			cancelled++
		case info.State == taskapi.Succeeded && n == 1:
		default:
			e.t.Errorf("task %d is %v with %d effect rows, want CANCELLED with none or SUCCEEDED with one", task.Sequence, info.State, n)
		}
	}
	return cancelled
}

func cancelEffectCases[Tx any](all map[string]suiteCase[Tx]) {
	// A batch handler learns of a cancellation by its context, then
	// completes with CompleteTx, writing an effect for each task that
	// Batch.Tasks lists: the cancelled task is no longer listed, and only
	// its batch-mate's effect commits.
	all["CompleteTxAfterACancellationNeitherListsNorWritesTheTask"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push("cancelled", "kept")
		started, listed := make(chan struct{}), make(chan []taskapi.Task, 2)
		result := make(chan error, 1)
		c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
		handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			listed <- b.Tasks()
			close(started)
			<-ctx.Done()
			listed <- b.Tasks()
			err := completeWithEffects(e, b, b.Tasks)
			result <- err
			return err
		}), taskproc.WithSize(2))
		e.start(c)
		if got := within(t, "the batch", listed); len(got) != 2 {
			t.Fatalf("the batch has %d tasks, want both", len(got))
		}
		e.cancelWhenRunning(started, tasks[0], "")
		if got := within(t, "the batch's tasks after the cancellation", listed); len(got) != 1 || got[0] != tasks[1] {
			t.Errorf("Batch.Tasks() after the cancellation = %v, want only %v", got, tasks[1])
		}
		if err := within(t, "CompleteTx", result); err != nil {
			t.Errorf("CompleteTx = %v, want nil: the other task was written", err)
		}
		if n := cancelledEffects(e, tasks); n != 1 {
			t.Errorf("%d tasks cancelled, want 1", n)
		}
	}

	// A completion function that decides a task which was cancelled before
	// it ran (it kept the batch's tasks from before) commits nothing: its
	// transaction rolls back, CompleteTx says why, and the other task goes
	// back to Ready, to be run again without it.
	all["CompleteTxThatDecidesACancelledTaskCommitsNothing"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push("cancelled", "kept")
		started, result := make(chan struct{}), make(chan error, 1)
		var batches atomic.Int32
		c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
		handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if batches.Add(1) > 1 { // the kept task, polled again
				return completeWithEffects(e, b, b.Tasks)
			}
			kept := b.Tasks()
			close(started)
			<-ctx.Done()
			err := completeWithEffects(e, b, func() []taskapi.Task { return kept })
			result <- err
			return err
		}), taskproc.WithSize(2))
		e.start(c)
		e.cancelWhenRunning(started, tasks[0], "")
		if err := within(t, "CompleteTx", result); !errors.Is(err, taskapi.ErrCancelled) {
			t.Errorf("CompleteTx deciding a cancelled task = %v, want ErrCancelled", err)
		}
		e.eventually("the kept task succeeded", func() bool { return e.info(tasks[1]).State == taskapi.Succeeded })
		if n := cancelledEffects(e, tasks); n != 1 {
			t.Errorf("%d tasks cancelled, want 1", n)
		}
	}

	// 400 tasks whose completions write an effect per task they decide,
	// while an operator cancels a third of them at random: every task ends
	// Cancelled with no effect or Succeeded with one. Under CompleteTx in
	// batches of 8, half of the batches decide the tasks they were polled
	// with; under ParallelTx; under a Composite whose context writes the
	// effects.
	all["CancellationsRacingCompleteTxCommitNoEffectOfACancelledTask"] = func(t *testing.T, e *env[Tx]) {
		raceCancellations(e, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			polled := b.Tasks()
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			list := b.Tasks
			if polled[0].Sequence%2 == 0 {
				list = func() []taskapi.Task { return polled }
			}
			err := completeWithEffects(e, b, list)
			if errors.Is(err, taskapi.ErrCancelled) {
				return nil // what is left of the batch was given back
			}
			return err
		}))
	}
	all["CancellationsRacingParallelTxCommitNoEffectOfACancelledTask"] = func(t *testing.T, e *env[Tx]) {
		raceCancellations(e, taskproc.ParallelTx(4, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			return taskapi.Decision{Result: taskapi.Success}, e.writeEffect(context.WithoutCancel(ctx), tx, task)
		}))
	}
	all["CancellationsRacingACompositeCommitNoEffectOfACancelledTask"] = func(t *testing.T, e *env[Tx]) {
		h, err := taskproc.NewComposite[Tx]().
			Each("work", func(ctx context.Context, task taskapi.Task, s *taskproc.Supplement) (taskproc.Outcome, error) {
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				return taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success}}, nil
			}).
			Context(func(ctx context.Context, tx Tx, c *taskproc.Completing) error {
				for _, task := range c.Tasks() {
					if err := e.writeEffect(ctx, tx, task); err != nil {
						return err
					}
				}
				return nil
			}).Handler()
		if err != nil {
			t.Fatal(err)
		}
		raceCancellations(e, h)
	}
}

// raceCancellations pushes 400 tasks for h, in batches of 8, and cancels a
// third of them at random meanwhile; every task must end Cancelled with no
// effect row or Succeeded with one.
func raceCancellations[Tx any](e *env[Tx], h taskproc.Handler) {
	e.t.Helper()
	e.effects()
	tasks := e.push(ids(400, 400)...)
	c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
	handle(e.t, c, topic, h, taskproc.WithSize(8))
	e.start(c)
	operator := e.canceller()
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, i := range rand.Perm(len(tasks))[:len(tasks)/3] {
			if _, err := operator.Cancel(e.ctx, e.db, topic, "", tasks[i].Sequence); err != nil {
				e.t.Errorf("Cancel(%d): %v", tasks[i].Sequence, err)
				return
			}
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
	})
	wg.Wait()
	e.allIn(len(tasks), taskapi.Succeeded, taskapi.Cancelled)
	n := cancelledEffects(e, tasks)
	e.t.Logf("%d of %d tasks cancelled", n, len(tasks))
}
