package conformance

import (
	"errors"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testRevive checks Revive and ReviveTasks: reviving from each revivable
// state, span and size limits and ascending order, ReviveReset (same task
// Ready again, descent raised, pollable), ReviveAppend/Supersede/Replace (old
// task Recreated, a new Ready task that carries on, the insertion's effect on
// older tasks), and that ReviveTasks with one task outside Expired..Succeeded
// fails with ErrStateMismatch and changes nothing.
func testRevive[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	// One case per revivable state: only the task in that state is revived,
	// it is Ready again with its own sequence, descent raised to the state it
	// left, owner, output and completion cleared, and it can be polled.
	for _, state := range revivable {
		all["ResetFrom"+stateName(state)] = func(t *testing.T) {
			w := worldOf(setup(t, b, ta))
			byState := map[taskapi.State]taskapi.Task{}
			for _, s := range revivable {
				byState[s] = w.task(ta, "id-"+stateName(s), s)
			}
			w.task(ta, "id-ready", taskapi.Ready)
			w.task(ta, "id-active", taskapi.Active)
			target := byState[state]
			before := w.snapshot(ta)

			revivals := w.revive(ta, taskapi.ReviveReset, state, taskapi.Unbounded, 10)
			want := []taskapi.Revival{{Previous: target, Current: target}}
			if len(revivals) != 1 || revivals[0] != want[0] {
				t.Fatalf("Revive(RESET, %v) = %+v, want %+v", state, revivals, want)
			}
			info := w.want(ta, target.Sequence, taskapi.Ready, state)
			// The output of the run before stays until the next completion:
			// it tells an operator why the task runs again (taskproc's
			// retries keep their log in it).
			output := "out-id-" + stateName(state)
			if state == taskapi.Expired {
				output = "" // an expired task was never completed
			}
			if info.Owner != "" || info.Output != output || !info.Completed.IsZero() {
				t.Errorf("reset task has owner %q, output %q, completed %v; want no owner or completion, the output %q kept",
					info.Owner, info.Output, info.Completed, output)
			}
			w.unchanged(before, target.Sequence)
			polled := w.poll(ta, 10)
			if got := seqsOf(polled...); len(got) == 0 || got[0] != target.Sequence {
				t.Errorf("Poll after reset = %v, want the reset task %d first", got, target.Sequence)
			}
		}
	}

	all["SizeLimitAscending"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		f0 := w.task(ta, "f0", taskapi.Failed)
		f1 := w.task(ta, "f1", taskapi.Failed)
		s := w.task(ta, "s", taskapi.Succeeded)
		f2 := w.task(ta, "f2", taskapi.Failed)
		f3 := w.task(ta, "f3", taskapi.Failed)

		first := w.revive(ta, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, 2)
		wantSeqs(t, "first Revive(size 2) previous", previousSeqs(first), seqsOf(f0, f1))
		rest := w.revive(ta, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, 10)
		wantSeqs(t, "second Revive(size 10) previous", previousSeqs(rest), seqsOf(f2, f3))
		none := w.revive(ta, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, 10)
		wantSeqs(t, "third Revive", previousSeqs(none), nil)
		for _, r := range append(first, rest...) {
			w.want(ta, r.Previous.Sequence, taskapi.Recreated, taskapi.Failed)
			w.want(ta, r.Current.Sequence, taskapi.Ready, taskapi.Ready)
		}
		w.want(ta, s.Sequence, taskapi.Succeeded, taskapi.Ready)
	}

	all["SpanLimit"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		f0 := w.task(ta, "f0", taskapi.Failed)
		f1 := w.task(ta, "f1", taskapi.Failed)
		w.task(ta, "s", taskapi.Succeeded)
		f2 := w.task(ta, "f2", taskapi.Failed)
		f3 := w.task(ta, "f3", taskapi.Failed)
		f4 := w.task(ta, "f4", taskapi.Failed)

		got := w.revive(ta, taskapi.ReviveReset, taskapi.Failed, taskapi.Range{From: f1.Sequence, To: f3.Sequence}, 10)
		wantSeqs(t, "Revive(f1..f3) previous", previousSeqs(got), seqsOf(f1, f2, f3))
		before := w.snapshot(ta)
		for _, span := range []taskapi.Range{
			{From: f4.Sequence + 1, To: taskapi.MaxSequence},
			{From: f4.Sequence, To: f0.Sequence}, // inverted: empty
			{From: taskapi.Inception, To: taskapi.Inception},
		} {
			if got := w.revive(ta, taskapi.ReviveReset, taskapi.Failed, span, 10); len(got) != 0 {
				t.Errorf("Revive(%v) = %+v, want nothing", span, got)
			}
		}
		w.unchanged(before)
		w.want(ta, f0.Sequence, taskapi.Failed, taskapi.Ready)
		w.want(ta, f4.Sequence, taskapi.Failed, taskapi.Ready)
		for _, task := range []taskapi.Task{f1, f2, f3} {
			w.want(ta, task.Sequence, taskapi.Ready, taskapi.Failed)
		}
	}

	all["ResetRaisesDescentToMax"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		task := w.task(ta, "x", taskapi.Succeeded)
		w.reassign(ta, taskapi.Assignment{Task: task, Result: taskapi.Failure})
		w.want(ta, task.Sequence, taskapi.Failed, taskapi.Succeeded)

		revivals := w.reviveTasks(ta, taskapi.ReviveReset, task)
		if len(revivals) != 1 || revivals[0].Previous != task || revivals[0].Current != task {
			t.Fatalf("ReviveTasks(RESET) = %+v, want Previous == Current == %+v", revivals, task)
		}
		// max(Failed, Succeeded) = Succeeded: the descent never goes down.
		w.want(ta, task.Sequence, taskapi.Ready, taskapi.Succeeded)
		polled := w.poll(ta, 5)
		wantSeqs(t, "Poll after reset", seqsOf(polled...), seqsOf(task))
		w.want(ta, task.Sequence, taskapi.Active, taskapi.Succeeded)
	}

	all["AppendRecreates"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		older := w.task(ta, "x", taskapi.Ready)
		old := w.taskWith(ta, taskapi.Creation{Identifier: "x", Input: "payload", Reference: "ref-x"}, taskapi.Succeeded)
		other := w.task(ta, "y", taskapi.Failed)

		revivals := w.revive(ta, taskapi.ReviveAppend, taskapi.Succeeded, taskapi.Unbounded, 10)
		if len(revivals) != 1 || revivals[0].Previous != old {
			t.Fatalf("Revive(APPEND, SUCCEEDED) = %+v, want one revival of %+v", revivals, old)
		}
		cur := revivals[0].Current
		if cur.Identifier != "x" || cur.Input != "payload" || cur.Sequence <= other.Sequence {
			t.Errorf("new task = %+v, want identifier x, input payload and a new, higher sequence", cur)
		}
		w.want(ta, old.Sequence, taskapi.Recreated, taskapi.Succeeded)
		info := w.want(ta, cur.Sequence, taskapi.Ready, taskapi.Ready)
		if info.Reference != "ref-x" || info.Owner != "" || info.Output != "" || !info.Completed.IsZero() {
			t.Errorf("new task info = %+v, want reference ref-x, no owner, output or completion", info)
		}
		w.want(ta, older.Sequence, taskapi.Ready, taskapi.Ready) // Append touches nothing else
		w.want(ta, other.Sequence, taskapi.Failed, taskapi.Ready)
	}

	// family builds, for identifier x: an older Ready, Failed, Expired and
	// Active task, the Succeeded task to revive, and a Ready task of y.
	type family struct {
		ready, failed, expired, active, target, other taskapi.Task
	}
	build := func(w *world[Tx]) family {
		var f family
		f.ready = w.task(ta, "x", taskapi.Ready)
		f.failed = w.task(ta, "x", taskapi.Failed)
		f.expired = w.task(ta, "x", taskapi.Expired)
		f.active = w.task(ta, "x", taskapi.Active)
		f.target = w.task(ta, "x", taskapi.Succeeded)
		f.other = w.task(ta, "y", taskapi.Ready)
		return f
	}
	checkNew := func(w *world[Tx], f family, revivals []taskapi.Revival) {
		w.t.Helper()
		if len(revivals) != 1 || revivals[0].Previous != f.target {
			w.t.Fatalf("ReviveTasks = %+v, want one revival of %+v", revivals, f.target)
		}
		cur := revivals[0].Current
		if cur.Identifier != "x" || cur.Input != f.target.Input || cur.Sequence <= f.other.Sequence {
			w.t.Errorf("new task = %+v, want identifier x, the same input and a new, higher sequence", cur)
		}
		w.want(ta, cur.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, f.target.Sequence, taskapi.Recreated, taskapi.Succeeded)
		w.want(ta, f.active.Sequence, taskapi.Active, taskapi.Ready)
		w.want(ta, f.other.Sequence, taskapi.Ready, taskapi.Ready)
	}

	all["SupersedeMakesOlderReadyRedundant"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		f := build(w)
		checkNew(w, f, w.reviveTasks(ta, taskapi.ReviveSupersede, f.target))
		w.want(ta, f.ready.Sequence, taskapi.Redundant, taskapi.Ready)
		w.want(ta, f.failed.Sequence, taskapi.Failed, taskapi.Ready)
		w.want(ta, f.expired.Sequence, taskapi.Expired, taskapi.Ready)
	}

	all["ReplaceMakesOlderReadyToSucceededRedundant"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		f := build(w)
		checkNew(w, f, w.revive(ta, taskapi.ReviveReplace, taskapi.Succeeded, taskapi.Unbounded, 10))
		w.want(ta, f.ready.Sequence, taskapi.Redundant, taskapi.Ready)
		w.want(ta, f.failed.Sequence, taskapi.Redundant, taskapi.Failed)
		w.want(ta, f.expired.Sequence, taskapi.Redundant, taskapi.Expired)
	}

	all["ReviveTasksInGivenOrder"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		byState := map[taskapi.State]taskapi.Task{}
		stateOf := map[int64]taskapi.State{}
		var last int64
		for _, s := range revivable {
			byState[s] = w.task(ta, "id-"+stateName(s), s)
			stateOf[byState[s].Sequence] = s
			last = byState[s].Sequence
		}
		given := []taskapi.Task{
			byState[taskapi.Succeeded], byState[taskapi.Expired], byState[taskapi.Filtered],
			byState[taskapi.Failed], byState[taskapi.Suspended],
		}
		revivals := w.reviveTasks(ta, taskapi.ReviveAppend, given...)
		if len(revivals) != len(given) {
			t.Fatalf("ReviveTasks = %+v, want %d revivals", revivals, len(given))
		}
		seen := map[int64]bool{}
		for i, r := range revivals {
			if r.Previous != given[i] {
				t.Errorf("revival %d: Previous = %+v, want %+v", i, r.Previous, given[i])
			}
			if r.Current.Identifier != given[i].Identifier || r.Current.Input != given[i].Input ||
				r.Current.Sequence <= last || seen[r.Current.Sequence] {
				t.Errorf("revival %d: Current = %+v, want a new task like %+v", i, r.Current, given[i])
			}
			seen[r.Current.Sequence] = true
			// Every revivable state is above Ready, so the descent becomes the old state.
			w.want(ta, given[i].Sequence, taskapi.Recreated, stateOf[given[i].Sequence])
			w.want(ta, r.Current.Sequence, taskapi.Ready, taskapi.Ready)
		}
	}

	all["ReviveTasksBySequence"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		task := w.task(ta, "x", taskapi.Filtered)
		revivals := w.reviveTasks(ta, taskapi.ReviveReset, taskapi.Task{Sequence: task.Sequence})
		if len(revivals) != 1 || revivals[0].Previous != task || revivals[0].Current != task {
			t.Fatalf("ReviveTasks(sequence only) = %+v, want Previous == Current == %+v (stored identifier and input)",
				revivals, task)
		}
		w.want(ta, task.Sequence, taskapi.Ready, taskapi.Filtered)
	}

	all["ReviveTasksDuplicatesOnce"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.task(ta, "a", taskapi.Failed)
		c := w.task(ta, "c", taskapi.Succeeded)
		revivals := w.reviveTasks(ta, taskapi.ReviveAppend, c, a, c)
		wantSeqs(t, "ReviveTasks(c, a, c) previous", previousSeqs(revivals), seqsOf(c, a))
		if n := len(w.all(ta)); n != 4 {
			t.Errorf("topic holds %d tasks, want 4 (two old, two new)", n)
		}
	}

	all["ReviveTasksNone"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "a", taskapi.Failed)
		before := w.snapshot(ta)
		if got := w.reviveTasks(ta, taskapi.ReviveAppend); len(got) != 0 {
			t.Errorf("ReviveTasks() = %+v, want nothing", got)
		}
		w.unchanged(before)
	}

	// One case per kind of task ReviveTasks must refuse; each is given between
	// two revivable tasks, and nothing may change.
	bad := []struct {
		name   string
		how    taskapi.Revivification
		newBad func(w *world[Tx]) taskapi.Task
	}{
		{"Ready", taskapi.ReviveReset, func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Ready) }},
		{"Active", taskapi.ReviveAppend, func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Active) }},
		{"Recreated", taskapi.ReviveSupersede, func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Recreated) }},
		{"Redundant", taskapi.ReviveReplace, func(w *world[Tx]) taskapi.Task { return w.task(ta, "bad", taskapi.Redundant) }},
		{"Missing", taskapi.ReviveAppend, func(w *world[Tx]) taskapi.Task {
			last := w.task(ta, "bad", taskapi.Failed)
			return taskapi.Task{Sequence: last.Sequence + 1000, Identifier: "bad", Input: "in-bad"}
		}},
		{"OtherTopic", taskapi.ReviveReset, func(w *world[Tx]) taskapi.Task { return w.task(tb, "bad", taskapi.Failed) }},
	}
	for _, c := range bad {
		all["ReviveTasksRejects"+c.name] = func(t *testing.T) {
			w := worldOf(setup(t, b, ta, tb))
			good1 := w.task(ta, "good1", taskapi.Failed)
			badTask := c.newBad(w)
			good2 := w.task(ta, "good2", taskapi.Expired)
			before := w.snapshot(ta, tb)

			revivals, err := w.repo.ReviveTasks(w.ctx, w.db, ta, c.how, good1, badTask, good2)
			wantErr(t, err, taskapi.ErrStateMismatch)
			if len(revivals) != 0 {
				t.Errorf("failed ReviveTasks returned %+v", revivals)
			}
			w.unchanged(before)
			// The good tasks are still revivable.
			revivals = w.reviveTasks(ta, c.how, good1, good2)
			wantSeqs(t, "ReviveTasks(good1, good2) previous", previousSeqs(revivals), seqsOf(good1, good2))
		}
	}

	all["RejectsStateNotRevivable"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "a", taskapi.Active)
		w.task(ta, "r", taskapi.Ready)
		w.task(ta, "c", taskapi.Recreated)
		w.task(ta, "d", taskapi.Redundant)
		before := w.snapshot(ta)
		for _, state := range []taskapi.State{
			taskapi.Active, taskapi.Ready, taskapi.Recreated, taskapi.Redundant, taskapi.State(12), taskapi.State(-1),
		} {
			revivals, err := w.repo.Revive(w.ctx, w.db, ta, taskapi.ReviveReset, state, taskapi.Unbounded, 10)
			if !errors.Is(err, taskapi.ErrInvalidArgument) || len(revivals) != 0 {
				t.Errorf("Revive(%v) = %+v, %v; want ErrInvalidArgument", state, revivals, err)
			}
		}
		w.unchanged(before)
	}

	all["SizeBelowOne"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "f", taskapi.Failed)
		before := w.snapshot(ta)
		for _, size := range []int{0, -1} {
			if got := w.revive(ta, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, size); len(got) != 0 {
				t.Errorf("Revive(size %d) = %+v, want nothing", size, got)
			}
		}
		w.unchanged(before)
	}

	all["UnknownTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "f", taskapi.Failed)
		before := w.snapshot(ta)
		if got := w.revive("nowhere", taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, 10); len(got) != 0 {
			t.Errorf("Revive(unknown topic) = %+v, want nothing", got)
		}
		w.unchanged(before)
	}

	cases(t, all)
}

// previousSeqs returns the sequences of the revived tasks, in order.
func previousSeqs(revivals []taskapi.Revival) []int64 {
	seqs := make([]int64, len(revivals))
	for i, r := range revivals {
		seqs[i] = r.Previous.Sequence
	}
	return seqs
}
