package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// retryPolicy gives max attempts and waits a fixed, short backoff.
func retryPolicy(max int, backoff time.Duration) taskproc.TopicOption {
	return taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: max, Backoff: func(int) time.Duration { return backoff }})
}

// later is far enough ahead that a task deferred to it stays put for the
// whole test, unless the test makes it due.
const later = time.Hour

// attemptsOf returns the attempts that the output of info records, failing
// t when it records none.
func attemptsOf(t *testing.T, info taskapi.Info) []taskproc.Attempt {
	t.Helper()
	attempts, ok := taskproc.Attempts(info.Output)
	if !ok {
		t.Fatalf("task %d's output %q records no attempts", info.Sequence, info.Output)
	}
	return attempts
}

// makeDue makes a deferred task due at once, as an operator would.
func (e *env[Tx]) makeDue(task taskapi.Task) {
	e.t.Helper()
	if err := e.repo.Defer(e.ctx, e.db, topic, time.Time{}, task); err != nil {
		e.t.Fatalf("Defer(zero): %v", err)
	}
}

func retryCases[Tx any](all map[string]suiteCase[Tx]) {
	// The pause is an hour in these cases: a task that comes back does so
	// because the loop woke for its due time, not because it polled again.
	all["ATransientFailureComesBackUntilItsAttemptsRunOut"] = func(t *testing.T, e *env[Tx]) {
		task := e.push("x")[0]
		var calls atomic.Int32
		m := e.manager(taskproc.Sequential(func(ctx context.Context, got taskapi.Task) (taskapi.Decision, error) {
			if got != task {
				t.Errorf("ran %+v, want the same task %+v every time", got, task)
			}
			return taskapi.Decision{}, taskproc.Transient(fmt.Errorf("flaky %d", calls.Add(1)))
		}), retryPolicy(3, 20*time.Millisecond), taskproc.WithPause(time.Hour))
		e.start(m)
		e.allIn(1, taskapi.Failed)
		info := e.info(task)
		attempts := attemptsOf(t, info)
		if len(attempts) != 3 || calls.Load() != 3 || info.Revivals != 2 {
			t.Fatalf("%d attempts recorded, %d runs, %d revivals; want 3, 3 and 2", len(attempts), calls.Load(), info.Revivals)
		}
		for i, a := range attempts {
			if a.Number != i+1 || a.Error != fmt.Sprintf("flaky %d", i+1) || a.At.IsZero() {
				t.Errorf("attempt %d = %+v, want number %d and error %q", i, a, i+1, fmt.Sprintf("flaky %d", i+1))
			}
		}
	}

	all["ATaskWaitsForItsBackoffWithItsAttemptsInView"] = func(t *testing.T, e *env[Tx]) {
		task := e.push("x")[0]
		var calls atomic.Int32
		m := e.manager(taskproc.Sequential(func(context.Context, taskapi.Task) (taskapi.Decision, error) {
			if calls.Add(1) == 1 {
				return taskapi.Decision{}, taskproc.Transient(errors.New("database away"))
			}
			return taskapi.Decision{Result: taskapi.Success, Output: "done"}, nil
		}), retryPolicy(5, later))
		before := time.Now()
		e.start(m)
		e.eventually("the first attempt", func() bool { return e.info(task).Revivals == 1 })
		info := e.info(task)
		if info.State != taskapi.Ready || info.NotBefore.Before(before.Add(later-time.Minute)) {
			t.Errorf("after a transient failure the task is %v, not before %v; want READY, deferred by the backoff", info.State, info.NotBefore)
		}
		if a := attemptsOf(t, info); len(a) != 1 || a[0].Error != "database away" {
			t.Errorf("attempts while waiting = %+v, want the one that failed", a)
		}
		e.makeDue(task)
		m.Resume()
		e.allIn(1, taskapi.Succeeded)
		if info := e.info(task); info.Output != "done" || calls.Load() != 2 {
			t.Errorf("output %q after %d runs, want the success's own after 2", info.Output, calls.Load())
		}
	}

	all["ASnoozeComesBackWithoutCountingAnAttempt"] = func(t *testing.T, e *env[Tx]) {
		task := e.push("x")[0]
		var calls atomic.Int32
		m := e.manager(taskproc.Sequential(func(context.Context, taskapi.Task) (taskapi.Decision, error) {
			switch calls.Add(1) {
			case 1:
				return taskapi.Decision{}, taskproc.Snooze(later)
			case 2:
				return taskapi.Decision{}, taskproc.Snooze(10 * time.Millisecond)
			}
			return taskapi.Decision{}, taskproc.Transient(errors.New("still broken"))
		}), retryPolicy(1, 0), taskproc.WithPause(time.Hour))
		e.start(m)
		e.eventually("the snooze", func() bool { return calls.Load() == 1 && e.info(task).State == taskapi.Ready })
		info := e.info(task)
		if info.NotBefore.Before(time.Now().Add(later-time.Minute)) || info.Output != "" || info.Revivals != 0 {
			t.Errorf("snoozed task: not before %v, output %q, %d revivals; want deferred by the snooze, nothing else changed",
				info.NotBefore, info.Output, info.Revivals)
		}
		e.makeDue(task)
		m.Resume()
		e.allIn(1, taskapi.Failed)
		if a := attemptsOf(t, e.info(task)); len(a) != 1 || calls.Load() != 3 {
			t.Errorf("%d attempts after %d runs, want the one transient failure after 3: snoozes count none", len(a), calls.Load())
		}
	}

	all["RetriesKeepTheirPlaceInTheirIdentifiersOrder"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("x", "x", "y")
		var (
			mu    sync.Mutex
			order []int64
			first atomic.Bool
		)
		m := e.manager(taskproc.Parallel(4, func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
			if task == tasks[0] && !first.Swap(true) {
				return taskapi.Decision{}, taskproc.Transient(errors.New("once"))
			}
			mu.Lock()
			order = append(order, task.Sequence)
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithCondition(taskapi.SingularByIdentifier), retryPolicy(3, 30*time.Millisecond), taskproc.WithPause(time.Hour))
		e.start(m)
		e.allIn(3, taskapi.Succeeded)
		mu.Lock()
		defer mu.Unlock()
		retried, next := -1, -1
		for i, s := range order {
			switch s {
			case tasks[0].Sequence:
				retried = i
			case tasks[1].Sequence:
				next = i
			}
		}
		if retried < 0 || next < retried {
			t.Errorf("successes in order %v: the retried task %d must succeed before the next of its identifier %d",
				order, tasks[0].Sequence, tasks[1].Sequence)
		}
	}

	all["ABatchFailingTransientlyRetriesEachOfItsTasks"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b", "c")
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			return taskproc.Transient(errors.New("the service is down"))
		}), retryPolicy(5, later))
		e.start(m)
		e.eventually("every task retried", func() bool { return e.count(taskapi.Ready) == 3 && e.info(tasks[2]).Revivals == 1 })
		for _, task := range tasks {
			if a := attemptsOf(t, e.info(task)); len(a) != 1 || a[0].Error != "the service is down" {
				t.Errorf("task %d's attempts = %+v, want the batch's failure", task.Sequence, a)
			}
		}
	}

	all["InterruptedAndRescuedRunsCountNoAttempt"] = func(t *testing.T, e *env[Tx]) {
		task := e.push("x")[0]
		var calls atomic.Int32
		block := make(chan struct{})
		m := e.manager(taskproc.Sequential(func(ctx context.Context, _ taskapi.Task) (taskapi.Decision, error) {
			switch calls.Add(1) {
			case 1:
				return taskapi.Decision{}, taskproc.Transient(errors.New("first"))
			case 2:
				close(block)
				<-ctx.Done() // a stop interrupts it
				return taskapi.Decision{}, ctx.Err()
			}
			return taskapi.Decision{}, taskproc.Transient(errors.New("third"))
		}), retryPolicy(5, later), taskproc.WithGrace(patience))
		e.start(m)
		e.eventually("the first attempt", func() bool { return e.info(task).Revivals == 1 })
		e.makeDue(task)
		m.Resume()
		within(t, "the second run", block)
		if err := m.Stop(cancelled()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop = %v, want context.Canceled", err)
		}
		info := e.info(task)
		if info.State != taskapi.Ready || len(attemptsOf(t, info)) != 1 {
			t.Fatalf("interrupted task: %v with %d attempts, want READY with the first one only", info.State, len(attemptsOf(t, info)))
		}
		// A crashed owner's run, rescued as the keeper does: expired, then
		// reset.
		crashed := e.owner("crashed")
		if polled, err := crashed.Poll(e.ctx, e.db, topic, 1); err != nil || len(polled) != 1 {
			t.Fatalf("Poll as the doomed owner = %v, %v", polled, err)
		}
		time.Sleep(2 * time.Millisecond) // silent for longer than the expiry below
		if _, err := e.repo.Expire(e.ctx, e.db, time.Millisecond); err != nil {
			t.Fatalf("Expire: %v", err)
		}
		if _, err := e.repo.ReviveTasks(e.ctx, e.db, topic, taskapi.ReviveReset, task); err != nil {
			t.Fatalf("ReviveTasks: %v", err)
		}
		e.start(m)
		e.eventually("the third run", func() bool { return calls.Load() == 3 && e.info(task).Revivals == 3 })
		info = e.info(task)
		if a := attemptsOf(t, info); len(a) != 2 || a[1].Number != 2 || a[1].Error != "third" {
			t.Errorf("attempts = %+v, want two: the stop and the rescue counted none", a)
		}
	}

	all["BatchRetryAndSnoozeNameTheirTasks"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b", "c")
		errs := make(chan error, 4)
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			errs <- b.Retry(taskapi.Task{Sequence: -1, Identifier: "nobody"}, errors.New("x"))
			errs <- b.Retry(b.Tasks()[0], nil)
			if err := errors.Join(b.Retry(b.Tasks()[0], errors.New("busy")), b.Snooze(b.Tasks()[1], later)); err != nil {
				return err
			}
			err := b.Complete(every(b, taskapi.Success))
			errs <- b.Snooze(b.Tasks()[2], later)
			return err
		}), retryPolicy(5, later), taskproc.WithSize(3))
		e.start(m)
		e.eventually("the batch settled", func() bool { return e.count(taskapi.Succeeded) == 1 })
		for i, want := range []error{taskapi.ErrInvalidArgument, taskapi.ErrInvalidArgument, taskproc.ErrSettled} {
			if err := within(t, "the handler", errs); !errors.Is(err, want) {
				t.Errorf("misuse %d = %v, want %v", i, err, want)
			}
		}
		retried, snoozed := e.info(tasks[0]), e.info(tasks[1])
		if retried.State != taskapi.Ready || retried.Revivals != 1 || snoozed.State != taskapi.Ready || snoozed.Revivals != 0 || snoozed.NotBefore.IsZero() {
			t.Errorf("retried %+v, snoozed %+v; want both READY and deferred, only the retried one revived", retried, snoozed)
		}
	}

	all["AManagerWakesForADeferredTaskWhenItIsDue"] = func(t *testing.T, e *env[Tx]) {
		events := &recorder{}
		m := e.manager(taskproc.Sequential(succeed), taskproc.WithPause(time.Hour), taskproc.WithObserver(events))
		e.start(m)
		e.eventually("an empty poll", func() bool { return len(events.of(taskproc.EventEmpty)) > 0 })
		pushed, err := e.repo.Push(e.ctx, e.db, topic, taskapi.Append,
			taskapi.Creation{Identifier: "x", NotBefore: time.Now().Add(300 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		m.Resume() // as a wake-up of the push would: the poll finds it not yet due
		e.allIn(1, taskapi.Succeeded)
		if info := e.info(pushed[0]); info.Completed.Before(info.NotBefore) {
			t.Errorf("completed at %v, before its time %v", info.Completed, info.NotBefore)
		}
	}
}
