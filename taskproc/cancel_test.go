package taskproc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// reconcileSoon is the reconciliation interval of the cancellation cases:
// without a Notifier, a reconciliation is how a Client learns that tasks
// it runs were cancelled.
const reconcileSoon = 20 * time.Millisecond

// canceller returns the Canceller of another owner of the env's database,
// an operator's.
func (e *env[Tx]) canceller() taskapi.Canceller[Tx] {
	e.t.Helper()
	return e.owner("operator")
}

// cancelWhenRunning cancels task once started tells that its handler runs.
func (e *env[Tx]) cancelWhenRunning(started <-chan struct{}, task taskapi.Task, reason string) {
	e.t.Helper()
	select {
	case <-started:
	case <-time.After(patience):
		e.t.Fatal("the handler never began")
	}
	got, err := e.canceller().Cancel(e.ctx, e.db, topic, reason, task.Sequence)
	if err != nil || len(got) != 1 || got[0].Owner != "proc" {
		e.t.Fatalf("Cancel = %v, %v; want the task, run by proc", got, err)
	}
}

// causeOf waits for the error that a handler reports.
func causeOf(t *testing.T, causes <-chan error) error {
	t.Helper()
	select {
	case cause := <-causes:
		return cause
	case <-time.After(patience):
		t.Fatal("the handler's context never ended")
		return nil
	}
}

func cancelCases[Tx any](all map[string]suiteCase[Tx]) {
	// A task cancelled while it runs: its handler's context ends with a
	// cause that says so, the other tasks of the batch go on, the task is
	// not retried although its handler asks for it, and it ends Cancelled.
	all["ACancelledTaskEndsItsHandlersContextAndIsNotRetried"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("slow", "quick")
		started, causes := make(chan struct{}), make(chan error, 1)
		rec := &recorder{}
		c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
		handle(t, c, topic, taskproc.Parallel(2, func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			if task.Identifier == "quick" {
				return taskapi.Decision{Result: taskapi.Success}, nil
			}
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return taskapi.Decision{}, taskproc.Transient(ctx.Err()) // asks for a retry
		}), taskproc.WithSize(2), taskproc.WithObserver(rec))
		e.start(c)
		e.cancelWhenRunning(started, tasks[0], "the caller went away")
		if cause := causeOf(t, causes); !errors.Is(cause, taskapi.ErrCancelled) {
			t.Fatalf("context.Cause = %v, want ErrCancelled", cause)
		}
		e.eventually("the batch settled", func() bool { return len(rec.of(taskproc.EventCompleted)) == 1 })
		info := e.info(tasks[0])
		if info.State != taskapi.Cancelled || info.Output != "cancelled: the caller went away" {
			t.Errorf("cancelled task: %v with output %q", info.State, info.Output)
		}
		if state := e.info(tasks[1]).State; state != taskapi.Succeeded {
			t.Errorf("its batch-mate is %v, want SUCCEEDED", state)
		}
		if n := len(e.infos(topic)); n != 2 {
			t.Errorf("the topic has %d tasks: the cancelled task was retried", n)
		}
		ev := rec.of(taskproc.EventCancelled)
		if len(ev) != 1 || len(ev[0].Tasks) != 1 || ev[0].Tasks[0] != tasks[0] {
			t.Errorf("EventCancelled = %+v, want one with the task", ev)
		}
		if got := c.Manager(topic).Stats().Cancelled; got != 1 {
			t.Errorf("Stats.Cancelled = %d, want 1", got)
		}
	}

	// A handler that ignores the cancellation and succeeds: nothing it
	// decided is written, and what its transaction wrote rolls back.
	all["AHandlerThatIgnoresTheCancellationAndSucceedsWritesNothing"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push("stubborn")
		started, causes := make(chan struct{}), make(chan error, 1)
		rec := &recorder{}
		c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
		stubborn := func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
		h := taskproc.ParallelTx(1, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			stubborn(ctx)
			// It carries on regardless, with a context of its own.
			return taskapi.Decision{Result: taskapi.Success, Output: "charged"}, e.writeEffect(context.WithoutCancel(ctx), tx, task)
		})
		if e.b.single {
			// SQLite's one connection: a transaction held open while the
			// handler waits would hold up the cancellation itself.
			h = taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
				stubborn(ctx)
				return taskapi.Decision{Result: taskapi.Success, Output: "charged"}, nil
			})
		}
		handle(t, c, topic, h, taskproc.WithObserver(rec))
		e.start(c)
		e.cancelWhenRunning(started, tasks[0], "")
		if cause := causeOf(t, causes); !errors.Is(cause, taskapi.ErrCancelled) {
			t.Fatalf("context.Cause = %v, want ErrCancelled", cause)
		}
		e.eventually("the batch ended", func() bool { return len(rec.of(taskproc.EventCancelled)) == 2 })
		if info := e.info(tasks[0]); info.State != taskapi.Cancelled || info.Output != "cancelled" {
			t.Errorf("the task is %v with output %q, want CANCELLED", info.State, info.Output)
		}
		if n := e.effectRows(tasks[0]); n != 0 {
			t.Errorf("the ignored cancellation left %d effect rows, want 0", n)
		}
		if ev := rec.of(taskproc.EventLost); len(ev) != 0 {
			t.Errorf("a cancelled batch was reported lost: %+v", ev)
		}
	}

	// A handler that completes before its Client heard of the cancellation
	// (it reconciles once an hour, with no Notifier): the database refuses
	// the completion, and the settlement finds out why.
	all["ASettlementLearnsOfACancellationBeforeTheReconciliation"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("late")
		started, proceed, result := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		rec := &recorder{}
		c := e.client(e.repo, taskproc.WithReconcile(time.Hour))
		handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-proceed
			err := b.Complete(taskproc.Decisions{b.Tasks()[0]: {Result: taskapi.Success}})
			result <- err
			return err
		}), taskproc.WithObserver(rec))
		e.start(c)
		e.cancelWhenRunning(started, tasks[0], "")
		close(proceed)
		if err := causeOf(t, result); !errors.Is(err, taskapi.ErrCancelled) {
			t.Fatalf("Complete = %v, want ErrCancelled", err)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Cancelled {
			t.Errorf("the task is %v, want CANCELLED", info.State)
		}
		if ev := rec.of(taskproc.EventCancelled); len(ev) == 0 || len(ev[0].Tasks) != 1 || ev[0].Tasks[0] != tasks[0] {
			t.Errorf("EventCancelled = %+v, want one with the task", ev)
		}
		if ev := rec.of(taskproc.EventLost); len(ev) != 0 {
			t.Errorf("a cancelled batch was reported lost: %+v", ev)
		}
	}

	// Under a Handler of whole batches, the batch's context ends; its
	// completion writes the other tasks and leaves the cancelled one out.
	all["ABatchHandlersContextEndsAndItsCompletionLeavesTheTaskOut"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b", "c")
		causes := make(chan error, 1)
		started := make(chan struct{})
		var result error
		done := make(chan struct{})
		c := e.client(e.repo, taskproc.WithReconcile(reconcileSoon))
		handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			decisions := taskproc.Decisions{}
			for _, task := range b.Tasks() {
				decisions[task] = taskapi.Decision{Result: taskapi.Success}
			}
			result = b.Complete(decisions)
			close(done)
			return result
		}), taskproc.WithSize(3))
		e.start(c)
		e.cancelWhenRunning(started, tasks[1], "")
		if cause := causeOf(t, causes); !errors.Is(cause, taskapi.ErrCancelled) {
			t.Fatalf("context.Cause = %v, want ErrCancelled", cause)
		}
		<-done
		if result != nil {
			t.Errorf("Complete = %v, want nil: the other tasks were written", result)
		}
		for i, want := range []taskapi.State{taskapi.Succeeded, taskapi.Cancelled, taskapi.Succeeded} {
			if got := e.info(tasks[i]).State; got != want {
				t.Errorf("task %d is %v, want %v", i, got, want)
			}
		}
	}
}
