package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// effects makes the user's table of effects: one row per committed run of
// a task, with its sequence and identifier.
func (e *env[Tx]) effects() {
	e.t.Helper()
	if err := e.b.exec(e.ctx, e.db, "CREATE TABLE "+e.b.mine+" (seq bigint NOT NULL, identifier varchar(50) NOT NULL)"); err != nil {
		e.t.Fatal(err)
	}
}

// effectRows returns how many rows of the user's table task has.
func (e *env[Tx]) effectRows(task taskapi.Task) int {
	e.t.Helper()
	n, err := e.b.count(e.ctx, e.db, fmt.Sprintf("SELECT count(*) FROM %s WHERE seq = %d", e.b.mine, task.Sequence))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// writeEffect writes the effect of task through tx.
func (e *env[Tx]) writeEffect(ctx context.Context, tx Tx, task taskapi.Task) error {
	return e.b.exec(ctx, tx, fmt.Sprintf("INSERT INTO %s (seq, identifier) VALUES (%d, '%s')", e.b.mine, task.Sequence, task.Identifier))
}

func taskTxCases[Tx any](all map[string]suiteCase[Tx]) {
	all["ParallelTxCommitsEachTasksEffectsWithItsResultInIdentifierOrder"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push(ids(24, 4)...) // four identifiers, six tasks each
		var mu sync.Mutex
		order := map[string][]int64{} // the sequences of each identifier, as their runs began
		e.start(e.manager(taskproc.ParallelTx(4, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			order[task.Identifier] = append(order[task.Identifier], task.Sequence)
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Success}, e.writeEffect(ctx, tx, task)
		}), taskproc.WithSize(24)))
		e.allIn(len(tasks), taskapi.Succeeded)
		for _, task := range tasks {
			if n := e.effectRows(task); n != 1 {
				t.Errorf("task %d has %d effects, want 1", task.Sequence, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for id, seqs := range order {
			if !slices.IsSorted(seqs) {
				t.Errorf("the tasks of %s ran in the order %v, want ascending sequence", id, seqs)
			}
		}
	}

	all["ParallelTxRetriesOrFailsATaskAloneAndRollsBackItsWrites"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push("flaky", "broken", "fine")
		var runs sync.Map // identifier → *atomic.Int32
		e.start(e.manager(taskproc.ParallelTx(3, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			n, _ := runs.LoadOrStore(task.Identifier, new(atomic.Int32))
			count := n.(*atomic.Int32).Add(1)
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return taskapi.Decision{}, err
			}
			switch {
			case task.Identifier == "flaky" && count == 1:
				return taskapi.Decision{}, taskproc.Transient(errors.New("try again"))
			case task.Identifier == "broken":
				return taskapi.Decision{}, errors.New("cannot be done")
			}
			return taskapi.Decision{Result: taskapi.Success, Output: "done"}, nil
		}), retryPolicy(3, 0)))
		e.eventually("every task settled", func() bool {
			return e.count(taskapi.Succeeded) == 2 && e.count(taskapi.Failed) == 1
		})
		want := map[string]struct {
			state   taskapi.State
			effects int
		}{"flaky": {taskapi.Succeeded, 1}, "broken": {taskapi.Failed, 0}, "fine": {taskapi.Succeeded, 1}}
		for _, task := range tasks {
			info, w := e.info(task), want[task.Identifier]
			if info.State != w.state || e.effectRows(task) != w.effects {
				t.Errorf("task %s is %v (%q) with %d effects, want %v with %d: a failed run's writes roll back",
					task.Identifier, info.State, info.Output, e.effectRows(task), w.state, w.effects)
			}
		}
		if out := e.info(tasks[1]).Output; out != "cannot be done" {
			t.Errorf("the failed task's output is %q, want the error's text", out)
		}
	}

	all["ParallelTxGivesBackWhatAStopInterrupts"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		tasks := e.push("a", "a", "b")
		started := make(chan struct{})
		var once sync.Once
		m := e.manager(taskproc.ParallelTx(1, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			once.Do(func() { close(started) })
			<-ctx.Done() // interrupted
			return taskapi.Decision{}, ctx.Err()
		}), taskproc.WithGrace(time.Minute))
		e.start(m)
		within(t, "the first run", started)
		if err := m.Stop(cancelled()); !errors.Is(err, context.Canceled) {
			t.Errorf("Stop = %v, want context.Canceled", err)
		}
		for _, task := range tasks {
			if info := e.info(task); info.State != taskapi.Ready || info.Output != "" || e.effectRows(task) != 0 {
				t.Errorf("task %d is %v (%q), want READY as never run: interrupted, no attempt", task.Sequence, info.State, info.Output)
			}
		}
	}
}
