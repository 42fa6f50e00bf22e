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

// ctxKey keys a value of the context the runtime was started with.
type ctxKey struct{}

func handlerCases[Tx any](all map[string]suiteCase[Tx]) {
	all["SequentialDecidesInPollOrderAndTurnsErrorsIntoDecisions"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("ok", "filtered", "broken", "panics")
		var (
			mu    sync.Mutex
			order []int64
		)
		e.start(e.manager(taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			order = append(order, task.Sequence)
			mu.Unlock()
			switch task.Identifier {
			case "filtered":
				return taskapi.Decision{}, taskproc.EndWith(taskapi.Filter, fmt.Errorf("not for us"))
			case "broken":
				return taskapi.Decision{}, fmt.Errorf("broken input")
			case "panics":
				panic("oops")
			}
			return taskapi.Decision{Result: taskapi.Success}, nil
		})))
		e.eventually("every task settled", func() bool { return e.count(taskapi.Ready, taskapi.Active) == 0 })
		want := map[string]struct {
			state  taskapi.State
			output string
		}{
			"ok": {taskapi.Succeeded, ""}, "filtered": {taskapi.Filtered, "not for us"},
			"broken": {taskapi.Failed, "broken input"}, "panics": {taskapi.Failed, "panic: oops"},
		}
		for _, task := range tasks {
			info, w := e.info(task), want[task.Identifier]
			if info.State != w.state || info.Output != w.output {
				t.Errorf("task %s is %v with %q, want %v with %q", task.Identifier, info.State, info.Output, w.state, w.output)
			}
		}
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Errorf("decided in order %v, want the poll's (FIFO)", order)
			}
		}
	}

	all["ParallelKeepsEachIdentifierInSequenceOrder"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push(ids(400, 10)...)
		var (
			mu      sync.Mutex
			running = map[string]bool{}
			last    = map[string]int64{}
			errs    []string
		)
		// The first task of id-0 waits until a task of id-1 has been
		// decided: one slow identifier holds up no other.
		otherDone, otherOnce := make(chan struct{}), sync.Once{}
		e.start(e.manager(taskproc.Parallel(8, func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			if running[task.Identifier] {
				errs = append(errs, fmt.Sprintf("two tasks of %s at once", task.Identifier))
			}
			if task.Sequence < last[task.Identifier] {
				errs = append(errs, fmt.Sprintf("task %d of %s after %d", task.Sequence, task.Identifier, last[task.Identifier]))
			}
			running[task.Identifier], last[task.Identifier] = true, task.Sequence
			mu.Unlock()
			if task.Sequence == tasks[0].Sequence {
				within(t, "a task of another identifier", otherDone)
			}
			if task.Identifier == "id-1" {
				otherOnce.Do(func() { close(otherDone) })
			}
			mu.Lock()
			running[task.Identifier] = false
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithSize(200)))
		e.allIn(400, taskapi.Succeeded)
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			t.Error(err)
		}
	}

	all["BufferedPollsAheadWithBackPressure"] = func(t *testing.T, e *env[Tx]) {
		e.push(ids(10, 10)...)
		release := make(chan struct{})
		var once sync.Once
		buffered := heldBuffered(2, 1, release)
		events := &recorder{}
		e.start(e.manager(buffered, taskproc.WithSize(1), taskproc.WithObserver(events)))
		// One batch at the worker, two in the buffer, one in the loop's
		// hands waiting for room, and one in the surge loop's if the worker
		// took the first batch before the loop looked: four or five
		// polled, no more.
		polled := 0
		e.eventually("a full buffer, every polled task Active", func() bool {
			polled = len(events.of(taskproc.EventPolled))
			return buffered.Depth() == 2 && polled >= 4 && e.count(taskapi.Active) == polled
		})
		if polled > 5 {
			t.Errorf("%d batches polled with a full buffer, want at most 5", polled)
		}
		once.Do(func() { close(release) })
		e.allIn(10, taskapi.Succeeded)
	}

	all["BufferedPollsBesideWhileWorkersWait"] = func(t *testing.T, e *env[Tx]) {
		// Two workers and no buffer: each full poll is taken by a worker
		// that waited for it, so the surge loop polls beside the loop.
		// Both workers busy, each loop holds one more batch: four polled.
		e.push(ids(10, 10)...)
		release := make(chan struct{})
		buffered := heldBuffered(0, 2, release)
		events := &recorder{}
		e.start(e.manager(buffered, taskproc.WithSize(1), taskproc.WithObserver(events)))
		e.eventually("two polls waiting for a worker", func() bool { return len(events.of(taskproc.EventPolled)) == 4 })
		if n := e.count(taskapi.Active); n != 4 {
			t.Errorf("%d tasks Active with both workers busy, want 4", n)
		}
		close(release)
		e.allIn(10, taskapi.Succeeded)
	}

	all["BufferedCarriesTheStartContextsValues"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		got := make(chan any, 1)
		m := e.manager(taskproc.Buffered(1, 2, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			got <- ctx.Value(ctxKey{})
			return b.Complete(every(b, taskapi.Success))
		}), taskproc.ReleaseOnClose))
		if err := m.Start(context.WithValue(context.WithoutCancel(e.ctx), ctxKey{}, "traced")); err != nil {
			t.Fatal(err)
		}
		if v := within(t, "the worker", got); v != "traced" {
			t.Errorf("the worker's context carries %v, want the value of Start's context", v)
		}
	}

	all["CompositeFollowUpsCommitWithTheBatchAndWakeTheirTopic"] = func(t *testing.T, e *env[Tx]) {
		c := e.client(e.repo)
		handle(t, c, topic, followingUp(e))
		// The follow-up topic's manager waits an hour after its empty first
		// poll: only the resume after the commit brings it back in time.
		events := &recorder{}
		handle(t, c, other, taskproc.Sequential(succeed), taskproc.WithPause(time.Hour), taskproc.WithObserver(events))
		e.start(c)
		e.eventually("the follow-up topic idle", func() bool { return len(events.of(taskproc.EventEmpty)) > 0 })
		parents := e.push("good", "bad")
		c.Resume(topic)
		e.eventually("the follow-up done", func() bool {
			infos := e.infos(other)
			return len(infos) == 1 && infos[0].State == taskapi.Succeeded
		})
		follow := e.infos(other)[0]
		if follow.Identifier != "next-good" || follow.Reference != fmt.Sprint(parents[0].Sequence) {
			t.Errorf("follow-up %s with reference %q, want next-good tagged with its parent %d", follow.Identifier, follow.Reference, parents[0].Sequence)
		}
		if info := e.info(parents[1]); info.State != taskapi.Failed {
			t.Errorf("the bad parent is %v, want FAILED", info.State)
		}
		if n, err := e.b.count(e.ctx, e.db, "SELECT count(*) FROM "+e.b.mine); err != nil || n != 1 {
			t.Errorf("the context's own write: %d rows (%v), want 1", n, err)
		}
		if len(events.of(taskproc.EventWoken)) == 0 {
			t.Error("the follow-up topic's manager was not woken")
		}
	}

	// A follow-up that a full topic refuses is a refusal of the completion:
	// nothing of the completing transaction is written, and the parent is
	// decided by the error (failed here, with no RetryPolicy), its output
	// naming the capacity.
	all["AFollowUpIntoAFullTopicFailsItsParentAndWritesNothing"] = func(t *testing.T, e *env[Tx]) {
		if err := e.repo.SetCapacity(e.ctx, e.db, other, taskapi.Capacity{Ready: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.repo.Push(e.ctx, e.db, other, taskapi.Append, taskapi.Creation{Identifier: "waiting"}); err != nil {
			t.Fatal(err)
		}
		c := e.client(e.repo)
		events := &recorder{}
		handle(t, c, topic, followingUp(e), taskproc.WithObserver(events))
		e.start(c)
		parent := e.push("parent")[0]
		e.eventually("the parent decided", func() bool { return e.info(parent).State != taskapi.Ready && e.info(parent).State != taskapi.Active })
		if info := e.info(parent); info.State != taskapi.Failed || !strings.Contains(info.Output, taskapi.ErrOverCapacity.Error()) {
			t.Errorf("the parent is %v with output %q, want FAILED naming the capacity", info.State, info.Output)
		}
		e.eventually("the batch's failure told", func() bool { return len(events.of(taskproc.EventFailed)) > 0 })
		var full *taskapi.CapacityError
		if failed := events.of(taskproc.EventFailed); len(failed) != 1 || !errors.As(failed[0].Err, &full) || full.Topic != other {
			t.Errorf("failed events %v, want one whose error is the capacity of %q", failed, other)
		}
		if infos := e.infos(other); len(infos) != 1 || infos[0].Identifier != "waiting" {
			t.Errorf("the full topic holds %v, want only its own task", infos)
		}
		if n, err := e.b.count(e.ctx, e.db, "SELECT count(*) FROM "+e.b.mine); err != nil || n != 0 {
			t.Errorf("the completing transaction's own write: %d rows (%v), want none", n, err)
		}
	}

	for mode, want := range map[taskproc.CloseMode]taskapi.State{taskproc.ReleaseOnClose: taskapi.Ready, taskproc.FailOnClose: taskapi.Failed} {
		all[fmt.Sprintf("BufferedSettlesWhatIsLeftAtStop/%d", mode)] = func(t *testing.T, e *env[Tx]) {
			tasks := e.push(ids(4, 4)...)
			working := make(chan struct{})
			var once sync.Once
			buffered := taskproc.Buffered(2, 1, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
				once.Do(func() { close(working) })
				<-ctx.Done()
				return ctx.Err()
			}), mode)
			events := &recorder{}
			m := e.manager(buffered, taskproc.WithSize(1), taskproc.WithObserver(events), taskproc.WithGrace(patience))
			e.start(m)
			within(t, "the worker", working)
			e.eventually("a full buffer", func() bool { return buffered.Depth() == 2 && len(events.of(taskproc.EventPolled)) == 4 })
			_ = m.Stop(cancelled())
			states := map[taskapi.State]int{}
			for _, task := range tasks {
				states[e.info(task).State]++
			}
			// The worker's batch was interrupted (Ready); the buffered ones
			// and the one waiting for room went as the mode says.
			wantStates := map[taskapi.State]int{taskapi.Ready: 1}
			wantStates[want] += 3
			if fmt.Sprint(states) != fmt.Sprint(wantStates) {
				t.Errorf("tasks by state after Stop = %v, want %v", states, wantStates)
			}
		}
	}
}

// followingUp returns a composite handler that fails the tasks identified
// "bad" and succeeds the others, and whose completing context writes a row
// of the user's own table (which it creates) and pushes a follow-up of
// every task to other, tagged with its parent.
func followingUp[Tx any](e *env[Tx]) taskproc.Handler {
	e.t.Helper()
	if err := e.b.exec(e.ctx, e.db, "CREATE TABLE "+e.b.mine+" (x integer)"); err != nil {
		e.t.Fatal(err)
	}
	steps := taskproc.NewComposite[Tx]().
		Each("judge", func(ctx context.Context, task taskapi.Task, s *taskproc.Supplement) (taskproc.Outcome, error) {
			if task.Identifier == "bad" {
				return taskproc.Outcome{}, fmt.Errorf("bad input")
			}
			return taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success}}, nil
		}).
		Context(func(ctx context.Context, tx Tx, c *taskproc.Completing) error {
			if err := e.b.exec(ctx, tx, "INSERT INTO "+e.b.mine+" (x) VALUES (1)"); err != nil {
				return err
			}
			for _, task := range c.Tasks() {
				if err := c.PushTagged(task, other, taskapi.Append, taskapi.Creation{Identifier: "next-" + task.Identifier}); err != nil {
					return err
				}
			}
			return nil
		})
	h, err := steps.Handler()
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// heldBuffered returns a Buffered handler of size batches and workers whose
// batches succeed once release is closed.
func heldBuffered(size, workers int, release <-chan struct{}) *taskproc.BufferedHandler {
	return taskproc.Buffered(size, workers, taskproc.HandlerFunc(func(_ context.Context, b *taskproc.Batch) error {
		<-release
		return b.Complete(every(b, taskapi.Success))
	}), taskproc.ReleaseOnClose)
}
