package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// every decides every task of b with result.
func every(b *taskproc.Batch, result taskapi.Result) taskproc.Decisions {
	d := taskproc.Decisions{}
	for _, task := range b.Tasks() {
		d[task] = taskapi.Decision{Result: result}
	}
	return d
}

func settleCases[Tx any](cases map[string]suiteCase[Tx]) {
	cases["ASecondSettlementIsRefused"] = func(t *testing.T, e *env[Tx]) {
		e.push("a", "b")
		refusals := make(chan []error, 1)
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if err := b.Complete(every(b, taskapi.Success)); err != nil {
				return err
			}
			refusals <- []error{b.Fail(errors.New("late")), b.Complete(every(b, taskapi.Failure)), b.Release()}
			return errors.New("an error after the settlement changes nothing")
		})))
		for i, err := range within(t, "the handler", refusals) {
			if !errors.Is(err, taskproc.ErrSettled) {
				t.Errorf("settlement %d after the first = %v, want ErrSettled", i+2, err)
			}
		}
		e.allIn(2, taskapi.Succeeded)
	}

	cases["SettlesFromAnotherGoroutineAfterHandleReturns"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		later, settled := make(chan struct{}), make(chan error, 1)
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			go func() {
				<-later
				settled <- b.Complete(every(b, taskapi.Filter))
			}()
			return nil
		})))
		e.eventually("the task Active", func() bool { return e.count(taskapi.Active) == 1 })
		close(later)
		if err := within(t, "the late settlement", settled); err != nil {
			t.Fatal(err)
		}
		e.allIn(1, taskapi.Filtered)
	}

	cases["CompletesInOneTransactionWithTheUsersWrites"] = func(t *testing.T, e *env[Tx]) {
		if err := e.b.exec(e.ctx, e.db, "CREATE TABLE "+e.b.mine+" (x integer)"); err != nil {
			t.Fatal(err)
		}
		tasks := e.push("kept", "undone")
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			return taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
				if err := e.b.exec(ctx, tx, "INSERT INTO "+e.b.mine+" (x) VALUES (1)"); err != nil {
					return nil, err
				}
				if b.Tasks()[0].Identifier == "undone" {
					return nil, errors.New("the user's own write failed")
				}
				return every(b, taskapi.Success), nil
			})
		}), taskproc.WithSize(1)))
		e.eventually("both settled", func() bool { return e.count(taskapi.Succeeded, taskapi.Failed) == 2 })
		if n, err := e.b.count(e.ctx, e.db, "SELECT count(*) FROM "+e.b.mine); err != nil || n != 1 {
			t.Errorf("the user's table holds %d rows (%v), want the one of the committed completion", n, err)
		}
		if info := e.info(tasks[1]); info.State != taskapi.Failed || !strings.Contains(info.Output, "the user's own write failed") {
			t.Errorf("the task whose completion failed is %v with %q, want FAILED with the error", info.State, info.Output)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Succeeded {
			t.Errorf("the completed task is %v, want SUCCEEDED", info.State)
		}
	}

	cases["ADecisionForAnUnknownTaskFailsTheBatch"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b")
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			d := every(b, taskapi.Success)
			d[taskapi.Task{Sequence: 987654321, Identifier: "stranger"}] = taskapi.Decision{Result: taskapi.Success}
			return b.Complete(d)
		})))
		e.allIn(2, taskapi.Failed)
		for _, task := range tasks {
			if out := e.info(task).Output; !strings.Contains(out, "987654321") {
				t.Errorf("output %q does not name the unknown task", out)
			}
		}
	}

	cases["ATaskWithoutADecisionEndsFailure"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("decided", "forgotten")
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			return b.Complete(taskproc.Decisions{b.Tasks()[0]: {Result: taskapi.Success}})
		})))
		e.eventually("both settled", func() bool { return e.count(taskapi.Succeeded, taskapi.Failed) == 2 })
		if info := e.info(tasks[1]); info.State != taskapi.Failed || !strings.Contains(info.Output, "no decision") {
			t.Errorf("the undecided task is %v with %q, want FAILED saying it was not decided", info.State, info.Output)
		}
	}

	cases["AZeroDecisionSaysSo"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("forgot")
		e.start(e.manager(taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			return taskapi.Decision{}, nil // a handler that forgot its result
		})))
		e.allIn(1, taskapi.Failed)
		if out := e.info(tasks[0]).Output; !strings.Contains(out, "zero Decision") {
			t.Errorf("the task of a zero Decision failed with %q, which does not say why", out)
		}
	}

	cases["AnErrorOrAPanicFailsTheBatch"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("error", "panic")
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if b.Tasks()[0].Identifier == "panic" {
				panic("handler exploded")
			}
			return errors.New("handler gave up")
		}), taskproc.WithSize(1)))
		e.allIn(2, taskapi.Failed)
		for task, want := range map[taskapi.Task]string{tasks[0]: "handler gave up", tasks[1]: "panic: handler exploded"} {
			if out := e.info(task).Output; !strings.Contains(out, want) {
				t.Errorf("output %q, want %q", out, want)
			}
		}
	}

	cases["ADatabaseErrorDuringSettlementIsRetriedNeverAResult"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b")
		var mu sync.Mutex
		calls := 0
		// Start and the poll go through; then the database is away for
		// five transactions, failing one way or another.
		failures := []error{
			fmt.Errorf("connection reset: %w", taskapi.ErrUnavailable),
			errors.New("an error the runtime does not know"),
			fmt.Errorf("deadlock: %w", taskapi.ErrConflict),
			fmt.Errorf("server closed the connection: %w", taskapi.ErrUnavailable),
			errors.New("i/o timeout"),
		}
		flaky := func(ctx context.Context, fn func(tx Tx) error) error {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n > 3 && n-4 < len(failures) { // Start's question of the pool's size, its read of the topics and the poll go through
				return failures[n-4]
			}
			return e.transact(ctx, fn)
		}
		events := &recorder{}
		settled := make(chan error, 1)
		m, err := taskproc.NewManager[Tx](e.repo, flaky, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			err := b.Complete(every(b, taskapi.Success))
			settled <- err
			return err
		}), taskproc.WithObserver(events), taskproc.WithPause(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		e.start(m)
		if err := within(t, "the completion", settled); err != nil {
			t.Errorf("Complete = %v, want nil once the database answered", err)
		}
		for _, task := range tasks {
			if info := e.info(task); info.State != taskapi.Succeeded {
				t.Errorf("task %d is %v with %q, want SUCCEEDED: a database error is no result", task.Sequence, info.State, info.Output)
			}
		}
		if n := len(events.of(taskproc.EventSettleRetried)); n < len(failures) {
			t.Errorf("%d settlement retries told, want at least %d", n, len(failures))
		}
		if n := len(events.of(taskproc.EventFailed)); n != 0 {
			t.Errorf("%d batches failed, want none", n)
		}
	}

	cases["CompleteTxOfAnotherTransactionTypeIsRefused"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		refused := make(chan error, 1)
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			refused <- taskproc.CompleteTx(b, func(context.Context, int) (taskproc.Decisions, error) { return nil, nil })
			return b.Complete(every(b, taskapi.Success))
		})))
		if err := within(t, "the handler", refused); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("CompleteTx with the wrong transaction type = %v, want ErrInvalidArgument", err)
		}
		e.allIn(1, taskapi.Succeeded)
	}

	cases["TasksAnotherOwnerTookAreLeftOut"] = func(t *testing.T, e *env[Tx]) {
		e.push("a", "b", "c")
		results := make(chan error, 1)
		first := true
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if first {
				first = false
				// The first task goes back to the queue behind the
				// handler's back: it is not this batch's any more.
				if err := e.repo.Release(ctx, e.db, topic, b.Tasks()[0]); err != nil {
					return err
				}
				err := b.Complete(every(b, taskapi.Success))
				results <- err
				return err
			}
			return b.Complete(every(b, taskapi.Success))
		})))
		if err := within(t, "the first completion", results); err != nil {
			t.Errorf("Complete with a task taken away = %v, want the others completed", err)
		}
		e.allIn(3, taskapi.Succeeded)
	}
}
