package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testReassign checks Reassign and ReassignAll: tasks in Expired..Succeeded
// take the state of the given result with the descent raised; a task outside
// that range (or not in the topic) fails the whole call with ErrStateMismatch
// and nothing changes; ReassignAll moves the tasks of one state within a span
// and returns how many, rejects a from state outside Expired..Succeeded with
// ErrInvalidArgument, and does nothing when from is already the target. An
// assignment's Output, when not empty, replaces the task's output, also of
// a task already in the result's state; an empty one keeps it; an output
// that is not valid text fails the call with ErrInvalidArgument.
func testReassign[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	all["SetsStateOfResult"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		moves := []struct {
			from taskapi.State
			to   taskapi.Result
		}{
			{taskapi.Expired, taskapi.Success},
			{taskapi.Failed, taskapi.Suspension},
			{taskapi.Suspended, taskapi.Failure},
			{taskapi.Filtered, taskapi.Success},
			{taskapi.Succeeded, taskapi.Filter},
		}
		tasks := make([]taskapi.Task, len(moves))
		befores := make([]taskapi.Info, len(moves))
		assignments := make([]taskapi.Assignment, len(moves))
		for i, m := range moves {
			tasks[i] = w.task(ta, "id-"+stateName(m.from), m.from)
			assignments[i] = taskapi.Assignment{Task: tasks[i], Result: m.to}
		}
		for i := range moves {
			befores[i] = w.info(ta, tasks[i].Sequence)
		}
		w.reassign(ta, assignments...)
		for i, m := range moves {
			// The descent of every task was Ready; it becomes the state left.
			info := w.want(ta, tasks[i].Sequence, m.to.State(), m.from)
			switch {
			case m.from == taskapi.Expired && info.Completed.IsZero():
				t.Errorf("reassigned expired task has no completion time")
			case m.from != taskapi.Expired && !info.Completed.Equal(befores[i].Completed):
				t.Errorf("reassigned %v task: completed %v, want it kept at %v", m.from, info.Completed, befores[i].Completed)
			}
			if info.Identifier != tasks[i].Identifier || info.Input != tasks[i].Input {
				t.Errorf("reassigned task changed identity: %+v", info)
			}
		}
	}

	all["SameStateLeftAlone"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		task := w.task(ta, "x", taskapi.Failed)
		before := w.snapshot(ta)
		w.reassign(ta, taskapi.Assignment{Task: task, Result: taskapi.Failure})
		w.unchanged(before) // still Failed, descent still Ready
	}

	all["MatchedBySequence"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		task := w.task(ta, "x", taskapi.Failed)
		w.reassign(ta, taskapi.Assignment{Task: taskapi.Task{Sequence: task.Sequence}, Result: taskapi.Success})
		info := w.want(ta, task.Sequence, taskapi.Succeeded, taskapi.Failed)
		if info.Identifier != "x" || info.Input != "in-x" {
			t.Errorf("task identity changed: %+v", info)
		}
	}

	all["DuplicatesMostSevereWins"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.task(ta, "a", taskapi.Succeeded)
		c := w.task(ta, "c", taskapi.Expired)
		w.reassign(ta,
			taskapi.Assignment{Task: a, Result: taskapi.Failure},
			taskapi.Assignment{Task: c, Result: taskapi.Suspension},
			taskapi.Assignment{Task: a, Result: taskapi.Success},
			taskapi.Assignment{Task: c, Result: taskapi.Filter},
		)
		w.want(ta, a.Sequence, taskapi.Failed, taskapi.Succeeded)
		w.want(ta, c.Sequence, taskapi.Suspended, taskapi.Expired)
	}

	all["OutputReplacesTheTasksOwn"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		failed := w.task(ta, "f", taskapi.Failed)
		expired := w.task(ta, "e", taskapi.Expired)
		succeeded := w.task(ta, "s", taskapi.Succeeded)
		w.reassign(ta,
			taskapi.Assignment{Task: failed, Result: taskapi.Success, Output: "retried by hand"},
			taskapi.Assignment{Task: expired, Result: taskapi.Failure, Output: "gave up: crashed its consumer"},
			taskapi.Assignment{Task: succeeded, Result: taskapi.Filter},
		)
		for _, c := range []struct {
			task          taskapi.Task
			state, before taskapi.State
			output        string
		}{
			{failed, taskapi.Succeeded, taskapi.Failed, "retried by hand"},
			{expired, taskapi.Failed, taskapi.Expired, "gave up: crashed its consumer"},
			{succeeded, taskapi.Filtered, taskapi.Succeeded, "out-s"},
		} {
			if info := w.want(ta, c.task.Sequence, c.state, c.before); info.Output != c.output {
				t.Errorf("task %q reassigned: output %q, want %q", c.task.Identifier, info.Output, c.output)
			}
		}
	}

	all["OutputOfATaskInItsResultsState"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		failed := w.task(ta, "f", taskapi.Failed)
		pushed := w.suspended(ta, "p")[0] // no completion time
		before := map[int64]taskapi.Info{failed.Sequence: w.info(ta, failed.Sequence), pushed.Sequence: w.info(ta, pushed.Sequence)}
		w.reassign(ta,
			taskapi.Assignment{Task: failed, Result: taskapi.Failure, Output: "poison: failed 5 times"},
			taskapi.Assignment{Task: pushed, Result: taskapi.Suspension, Output: "waits for the operator"},
		)
		for sequence, output := range map[int64]string{failed.Sequence: "poison: failed 5 times", pushed.Sequence: "waits for the operator"} {
			info, was := w.info(ta, sequence), before[sequence]
			if info.Output != output {
				t.Errorf("task %d: output %q, want %q", sequence, info.Output, output)
			}
			info.Output = was.Output
			if info != was {
				t.Errorf("task %d changed beyond its output: %+v, want %+v", sequence, info, was)
			}
		}
	}

	all["OutputsThatDifferWithinARun"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		outputs := []string{"a", "a", "b", "", "b", "a", "", "c"}
		var assignments []taskapi.Assignment
		var tasks []taskapi.Task
		for i, output := range outputs {
			task := w.task(ta, fmt.Sprint("id-", i), taskapi.Failed)
			tasks = append(tasks, task)
			assignments = append(assignments, taskapi.Assignment{Task: task, Result: taskapi.Success, Output: output})
		}
		if last, first := tasks[len(tasks)-1].Sequence, tasks[0].Sequence; last-first != int64(len(tasks)-1) {
			t.Fatalf("the tasks have sequences %d to %d, want consecutive ones", first, last)
		}
		w.reassign(ta, assignments...)
		for i, task := range tasks {
			want := outputs[i]
			if want == "" {
				want = "out-" + task.Identifier
			}
			if info := w.want(ta, task.Sequence, taskapi.Succeeded, taskapi.Failed); info.Output != want {
				t.Errorf("task %d: output %q, want %q", i, info.Output, want)
			}
		}
	}

	all["DuplicatesMostSevereWinsWithItsOutput"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.task(ta, "a", taskapi.Succeeded)
		c := w.task(ta, "c", taskapi.Expired)
		w.reassign(ta,
			taskapi.Assignment{Task: a, Result: taskapi.Success, Output: "fine"},
			taskapi.Assignment{Task: a, Result: taskapi.Failure},
			taskapi.Assignment{Task: c, Result: taskapi.Filter, Output: "skip"},
			taskapi.Assignment{Task: a, Result: taskapi.Failure, Output: "broken"},
			taskapi.Assignment{Task: c, Result: taskapi.Success, Output: "done"},
			taskapi.Assignment{Task: a, Result: taskapi.Failure},
		)
		if info := w.want(ta, a.Sequence, taskapi.Failed, taskapi.Succeeded); info.Output != "broken" {
			t.Errorf("task a: output %q, want %q, the last output of the most severe result", info.Output, "broken")
		}
		if info := w.want(ta, c.Sequence, taskapi.Filtered, taskapi.Expired); info.Output != "skip" {
			t.Errorf("task c: output %q, want %q, the output of the most severe result", info.Output, "skip")
		}
	}

	all["RejectsInvalidOutputs"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		good := w.task(ta, "good", taskapi.Failed)
		other := w.task(ta, "other", taskapi.Expired)
		before := w.snapshot(ta)
		for _, bad := range []string{"a\x00b", "\xff\xfe", "ok" + string([]byte{0xc3})} {
			err := w.repo.Reassign(w.ctx, w.db, ta,
				taskapi.Assignment{Task: good, Result: taskapi.Success, Output: "fine"},
				taskapi.Assignment{Task: other, Result: taskapi.Success, Output: bad},
			)
			wantErr(t, err, taskapi.ErrInvalidArgument)
			w.unchanged(before)
		}
	}

	all["NoAssignments"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "x", taskapi.Failed)
		before := w.snapshot(ta)
		w.reassign(ta)
		w.unchanged(before)
	}

	// One case per kind of task Reassign must refuse; it is given between two
	// reassignable tasks, and nothing may change.
	bad := []struct {
		name   string
		newBad func(w *world[Tx]) taskapi.Task
	}{
		{"Ready", func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Ready) }},
		{"Active", func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Active) }},
		{"Recreated", func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Recreated) }},
		{"Redundant", func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Redundant) }},
		{"Missing", func(w *world[Tx]) taskapi.Task {
			last := w.task(ta, "bad", taskapi.Failed)
			return taskapi.Task{Sequence: last.Sequence + 1000, Identifier: "bad"}
		}},
		{"OtherTopic", func(w *world[Tx]) taskapi.Task { return w.task(tb, "bad", taskapi.Failed) }},
	}
	for _, c := range bad {
		all["Rejects"+c.name] = func(t *testing.T) {
			w := worldOf(setup(t, b, ta, tb))
			good1 := w.task(ta, "good1", taskapi.Failed)
			badTask := c.newBad(w)
			good2 := w.task(ta, "good2", taskapi.Expired)
			before := w.snapshot(ta, tb)

			err := w.repo.Reassign(w.ctx, w.db, ta,
				taskapi.Assignment{Task: good1, Result: taskapi.Success},
				taskapi.Assignment{Task: badTask, Result: taskapi.Success},
				taskapi.Assignment{Task: good2, Result: taskapi.Failure},
			)
			wantErr(t, err, taskapi.ErrStateMismatch)
			w.unchanged(before)
		}
	}

	all["AllWithinSpan"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		f0 := w.task(ta, "f0", taskapi.Failed)
		f1 := w.task(ta, "f1", taskapi.Failed)
		s := w.task(ta, "s", taskapi.Succeeded)
		f2 := w.task(ta, "f2", taskapi.Failed)
		f3 := w.task(ta, "f3", taskapi.Failed)
		w.task(tb, "f", taskapi.Failed)
		beforeB := w.snapshot(tb)

		n, err := w.repo.ReassignAll(w.ctx, w.db, ta, taskapi.Failed, taskapi.Success, taskapi.Range{From: f1.Sequence, To: f2.Sequence})
		w.must(err, "ReassignAll(f1..f2)")
		wantN(t, "ReassignAll(FAILED → SUCCESS, f1..f2)", n, 2)
		w.want(ta, f0.Sequence, taskapi.Failed, taskapi.Ready)
		w.want(ta, f1.Sequence, taskapi.Succeeded, taskapi.Failed)
		w.want(ta, s.Sequence, taskapi.Succeeded, taskapi.Ready)
		w.want(ta, f2.Sequence, taskapi.Succeeded, taskapi.Failed)
		w.want(ta, f3.Sequence, taskapi.Failed, taskapi.Ready)

		n, err = w.repo.ReassignAll(w.ctx, w.db, ta, taskapi.Failed, taskapi.Filter, taskapi.Unbounded)
		w.must(err, "ReassignAll(unbounded)")
		wantN(t, "ReassignAll(FAILED → FILTER, unbounded)", n, 2)
		w.want(ta, f0.Sequence, taskapi.Filtered, taskapi.Failed)
		w.want(ta, f3.Sequence, taskapi.Filtered, taskapi.Failed)
		w.unchanged(beforeB)

		n, err = w.repo.ReassignAll(w.ctx, w.db, ta, taskapi.Failed, taskapi.Filter, taskapi.Unbounded)
		w.must(err, "ReassignAll(nothing left)")
		wantN(t, "ReassignAll with nothing left", n, 0)
	}

	// One case per from state: only the tasks in that state move.
	for _, from := range revivable {
		all["AllFrom"+stateName(from)] = func(t *testing.T) {
			w := worldOf(setup(t, b, ta))
			byState := map[taskapi.State]taskapi.Task{}
			for _, s := range revivable {
				byState[s] = w.task(ta, "id-"+stateName(s), s)
			}
			w.task(ta, "ready", taskapi.Ready)
			w.task(ta, "active", taskapi.Active)
			to := taskapi.Failure
			if from == taskapi.Failed {
				to = taskapi.Success
			}
			target := byState[from].Sequence
			before := w.snapshot(ta)

			n, err := w.repo.ReassignAll(w.ctx, w.db, ta, from, to, taskapi.Unbounded)
			w.must(err, "ReassignAll(%v → %v)", from, to)
			wantN(t, "ReassignAll", n, 1)
			w.want(ta, target, to.State(), from)
			w.unchanged(before, target)
		}
	}

	all["AllRejectsFromOutsideExpiredToSucceeded"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "a", taskapi.Active)
		w.task(ta, "r", taskapi.Ready)
		w.task(ta, "c", taskapi.Recreated)
		w.task(ta, "d", taskapi.Redundant)
		before := w.snapshot(ta)
		for _, from := range []taskapi.State{
			taskapi.Active, taskapi.Ready, taskapi.Recreated, taskapi.Redundant, taskapi.State(12), taskapi.State(-1),
		} {
			n, err := w.repo.ReassignAll(w.ctx, w.db, ta, from, taskapi.Success, taskapi.Unbounded)
			if !errors.Is(err, taskapi.ErrInvalidArgument) || n != 0 {
				t.Errorf("ReassignAll(from %v) = %d, %v; want ErrInvalidArgument", from, n, err)
			}
		}
		w.unchanged(before)
	}

	all["AllSameStateIsNoop"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "f", taskapi.Failed)
		w.task(ta, "s", taskapi.Succeeded)
		before := w.snapshot(ta)
		for _, r := range []taskapi.Result{taskapi.Failure, taskapi.Success} {
			from := r.State()
			n, err := w.repo.ReassignAll(w.ctx, w.db, ta, from, r, taskapi.Unbounded)
			w.must(err, "ReassignAll(%v → %v)", from, r)
			wantN(t, "ReassignAll from the target state", n, 0)
		}
		w.unchanged(before)
	}

	all["AllUnknownTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "f", taskapi.Failed)
		before := w.snapshot(ta)
		n, err := w.repo.ReassignAll(w.ctx, w.db, "nowhere", taskapi.Failed, taskapi.Success, taskapi.Unbounded)
		w.must(err, "ReassignAll(unknown topic)")
		wantN(t, "ReassignAll(unknown topic)", n, 0)
		w.unchanged(before)
	}

	cases(t, all)
}
