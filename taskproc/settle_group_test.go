package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// resultOf is the result the grouping cases decide for a task: one of
// three, by its sequence, so that a completion written for another
// batch's task would show.
func resultOf(task taskapi.Task) taskapi.Result {
	return []taskapi.Result{taskapi.Success, taskapi.Failure, taskapi.Filter}[task.Sequence%3]
}

func groupCases[Tx any](cases map[string]suiteCase[Tx]) {
	// Batches settled from goroutines of their own, many at once, with a
	// settlement window: every task ends with its own batch's decision,
	// once.
	cases["GroupedCompletionsGiveEveryTaskItsOwnResult"] = func(t *testing.T, e *env[Tx]) {
		const n = 1500
		tasks := e.push(ids(n, n)...)
		var (
			mu      sync.Mutex
			decided = map[int64]int{}
			errs    []error
		)
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			go func() {
				d := taskproc.Decisions{}
				for _, task := range b.Tasks() {
					d[task] = taskapi.Decision{Result: resultOf(task), Output: fmt.Sprint("out-", task.Sequence)}
				}
				err := b.Complete(d)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, task := range b.Tasks() {
					decided[task.Sequence]++
				}
			}()
			return nil
		}), taskproc.WithSize(7), taskproc.WithPollers(4), taskproc.WithSettleWindow(20*time.Millisecond)))
		// Each goroutine notes its tasks after its Complete returned, which
		// may be after the database shows them settled.
		e.eventually("every task settled and its Complete returned", func() bool {
			mu.Lock()
			returned := 0
			for _, times := range decided {
				returned += times
			}
			mu.Unlock()
			return returned >= n && e.count(taskapi.Succeeded, taskapi.Failed, taskapi.Filtered) == n
		})
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			t.Errorf("Complete: %v", err)
		}
		for _, task := range tasks {
			info := e.info(task)
			if info.State != resultOf(task).State() || info.Output != fmt.Sprint("out-", task.Sequence) {
				t.Errorf("task %d is %v with %q, want %v with its own output", task.Sequence, info.State, info.Output, resultOf(task).State())
			}
			if decided[task.Sequence] != 1 {
				t.Errorf("task %d decided %d times, want once", task.Sequence, decided[task.Sequence])
			}
		}
	}

	// A group's statement is all or nothing: when the database refuses it
	// for one batch's decisions (an output that is not text), the other
	// batch's are written alone and stand.
	cases["AGroupRefusedForOneBatchLeavesTheOthersTheirResults"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("good", "bad")
		settled := make(chan error, 2)
		e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			go func() {
				output := "ok"
				if b.Tasks()[0].Identifier == "bad" {
					output = "\xff"
				}
				settled <- b.Complete(taskproc.Decisions{b.Tasks()[0]: {Result: taskapi.Success, Output: output}})
			}()
			return nil
		}), taskproc.WithSize(1), taskproc.WithSettleWindow(2*time.Second)))
		for range 2 {
			within(t, "a settlement", settled)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Succeeded || info.Output != "ok" {
			t.Errorf("the good batch's task is %v with %q, want SUCCEEDED with ok", info.State, info.Output)
		}
		if info := e.info(tasks[1]); info.State != taskapi.Failed {
			t.Errorf("the bad batch's task is %v with %q, want FAILED for its output", info.State, info.Output)
		}
	}

	// With a settlement window, Sequential hands its decisions over and
	// takes the next batch while they wait: the second task runs while the
	// first one's result is still in the window.
	cases["SequentialTakesItsNextBatchWhileTheLastWaitsInTheWindow"] = func(t *testing.T, e *env[Tx]) {
		e.push("a", "b")
		started := make(chan string, 2)
		m := e.manager(taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			started <- task.Identifier
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithSize(1), taskproc.WithSettleWindow(taskproc.MaxSettleWindow))
		e.start(m)
		within(t, "the first task", started)
		within(t, "the second task", started)
		if n := e.count(taskapi.Succeeded); n != 0 {
			t.Errorf("%d tasks Succeeded before the second ran, want none: the first batch's settlement held the loop", n)
		}
		stopWithin(t, m.Stop)
		e.allIn(2, taskapi.Succeeded)
	}

	// A window longer than the runtime's bound on its own statements (half
	// the expiry) bounds the group's statement, not its wait.
	cases["AWindowLongerThanTheRuntimesBoundIsWritten"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		c := e.client(e.repo, taskproc.WithExpiry(2*time.Second), taskproc.WithHeartbeat(200*time.Millisecond),
			taskproc.WithSettleWindow(3*time.Second))
		handle(t, c, topic, taskproc.Sequential(succeed))
		e.start(c)
		e.eventually("the task Succeeded", func() bool { return e.count(taskapi.Succeeded) == 1 })
	}

	// Handed-over settlements are bounded: with 400 tasks of them
	// unwritten in a window of a minute, Sequential writes the third
	// batch's itself (500 at most are handed over), and the loop claims no
	// more while it waits.
	cases["ALoopClaimsNoFurtherThanItsSettlementsAreWritten"] = func(t *testing.T, e *env[Tx]) {
		e.push(ids(2000, 2000)...)
		var calls atomic.Int32
		m := e.manager(taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			calls.Add(1)
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithSize(200), taskproc.WithSettleWindow(taskproc.MaxSettleWindow))
		e.start(m)
		e.eventually("three batches decided", func() bool { return calls.Load() >= 600 })
		if n, active := calls.Load(), e.count(taskapi.Active); n != 600 || active != 600 {
			t.Errorf("%d tasks decided, %d Active; want the three batches whose settlements wait", n, active)
		}
		stopWithin(t, m.Stop)
		e.allIn(2000, taskapi.Succeeded, taskapi.Ready)
		if n := e.count(taskapi.Succeeded); n != 600 {
			t.Errorf("%d tasks Succeeded after Stop, want the 600 decided", n)
		}
	}

	// A result waiting in the settlement window is written by Stop, at
	// once: the window outlasts Stop's deadline.
	cases["AWindowedResultIsWrittenBeforeStopReturns"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		completing, completed := make(chan struct{}), make(chan error, 1)
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(completing)
			err := b.Complete(every(b, taskapi.Success))
			completed <- err
			return err
		}), taskproc.WithSettleWindow(taskproc.MaxSettleWindow))
		e.start(m)
		within(t, "the handler", completing)
		if n := e.count(taskapi.Succeeded); n != 0 {
			t.Fatalf("%d tasks Succeeded within the window, want none before Stop", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), taskproc.MaxSettleWindow/2)
		defer cancel()
		if err := m.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if err := within(t, "Complete", completed); err != nil {
			t.Errorf("Complete = %v, want nil", err)
		}
		e.allIn(1, taskapi.Succeeded)
	}
}

// A settlement window out of its bounds is refused by name.
func TestASettlementWindowOutOfBoundsIsRefused(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, taskproc.MaxSettleWindow + time.Millisecond} {
		_, err := taskproc.NewManager[int](nil, nil, topic, nil, taskproc.WithSettleWindow(d))
		if !errors.Is(err, taskapi.ErrInvalidArgument) || !strings.Contains(err.Error(), "settlement window") {
			t.Errorf("WithSettleWindow(%v): %v, want ErrInvalidArgument naming the window", d, err)
		}
	}
}
