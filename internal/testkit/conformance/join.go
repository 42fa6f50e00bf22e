package conformance

import (
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testJoin checks Join: a Singular group is released when every identifier
// has a Suspended task in the topic, an Eternal group when every identifier
// has a task in any state but Redundant; releasing sets all Suspended tasks
// of the group's identifiers Ready (descent unchanged); Join returns the
// identifiers of the released groups in the order given, each once, and skips
// empty groups.
func testJoin[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	join := func(w *world[Tx], topic string, junction taskapi.Junction, groups ...[]string) []string {
		w.t.Helper()
		released, err := w.repo.Join(w.ctx, w.db, topic, junction, groups...)
		w.must(err, "Join(%q, %v, %q)", topic, junction, groups)
		return released
	}

	all["SingularReleasesWhenAllSuspended"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.suspended(ta, "a")[0]
		// b is Suspended by reassignment from Failed, so its descent is Failed.
		bt := w.task(ta, "b", taskapi.Failed)
		w.reassign(ta, taskapi.Assignment{Task: bt, Result: taskapi.Suspension})
		c := w.suspended(ta, "c")[0]

		wantStrings(t, "Join(SINGULAR, [a b])", join(w, ta, taskapi.Singular, []string{"a", "b"}), []string{"a", "b"})
		w.want(ta, a.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, bt.Sequence, taskapi.Ready, taskapi.Failed) // descent unchanged
		w.want(ta, c.Sequence, taskapi.Suspended, taskapi.Ready)
		polled := w.poll(ta, 10)
		wantSeqs(t, "Poll after Join", seqsOf(polled...), seqsOf(a, bt))
	}

	all["SingularNotWhenOneMissing"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.suspended(ta, "a")[0]
		before := w.snapshot(ta)
		wantStrings(t, "Join(SINGULAR) with b missing", join(w, ta, taskapi.Singular, []string{"a", "b"}), nil)
		w.unchanged(before)

		// A task of b that is not Suspended does not do either.
		w.task(ta, "b", taskapi.Succeeded)
		w.task(ta, "b", taskapi.Ready)
		before = w.snapshot(ta)
		wantStrings(t, "Join(SINGULAR) with b not suspended", join(w, ta, taskapi.Singular, []string{"a", "b"}), nil)
		w.unchanged(before)
		w.want(ta, a.Sequence, taskapi.Suspended, taskapi.Ready)
	}

	all["SingularCountsOnlyTheTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		w.suspended(ta, "a")
		w.suspended(tb, "b")
		before := w.snapshot(ta, tb)
		wantStrings(t, "Join(SINGULAR) with b suspended in another topic",
			join(w, ta, taskapi.Singular, []string{"a", "b"}), nil)
		w.unchanged(before)
	}

	all["ReleasesEverySuspendedTaskOfTheGroup"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		a1 := w.suspended(ta, "a")[0]
		a2 := w.task(ta, "a", taskapi.Suspended)
		bt := w.suspended(ta, "b")[0]
		elsewhere := w.suspended(tb, "a", "b")
		before := w.snapshot(tb)

		wantStrings(t, "Join(SINGULAR, [a b])", join(w, ta, taskapi.Singular, []string{"a", "b"}), []string{"a", "b"})
		for _, task := range []taskapi.Task{a1, a2, bt} {
			w.want(ta, task.Sequence, taskapi.Ready, taskapi.Ready)
		}
		w.unchanged(before)
		w.wantState(tb, elsewhere[0].Sequence, taskapi.Suspended)
	}

	all["EternalReleasesWhenAllExist"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.suspended(ta, "a")[0]
		bt := w.task(ta, "b", taskapi.Succeeded)
		c := w.task(ta, "c", taskapi.Active)
		d := w.task(ta, "d", taskapi.Recreated) // followed by a Ready task of d

		wantStrings(t, "Join(ETERNAL, [a b c d])",
			join(w, ta, taskapi.Eternal, []string{"a", "b", "c", "d"}), []string{"a", "b", "c", "d"})
		w.want(ta, a.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, bt.Sequence, taskapi.Succeeded, taskapi.Ready)
		w.want(ta, c.Sequence, taskapi.Active, taskapi.Ready)
		w.want(ta, d.Sequence, taskapi.Recreated, taskapi.Failed)
	}

	all["EternalNotWhenOnlyRedundantOrMissing"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.suspended(ta, "a")[0]
		// Leave b with a Redundant task only: supersede it, purge the successor.
		old := w.task(ta, "b", taskapi.Redundant)
		successor := w.all(ta)
		last := successor[len(successor)-1]
		if last.Identifier != "b" || last.State != taskapi.Ready {
			t.Fatalf("the successor of the redundant task is %+v", last)
		}
		wantN(t, "Purge(successor, READY)", w.purge(ta, taskapi.Range{From: last.Sequence, To: last.Sequence}, taskapi.Ready), 1)
		w.wantState(ta, old.Sequence, taskapi.Redundant)

		before := w.snapshot(ta)
		wantStrings(t, "Join(ETERNAL) with b only redundant", join(w, ta, taskapi.Eternal, []string{"a", "b"}), nil)
		wantStrings(t, "Join(ETERNAL) with c missing", join(w, ta, taskapi.Eternal, []string{"a", "c"}), nil)
		w.unchanged(before)
		w.wantState(ta, a.Sequence, taskapi.Suspended)
	}

	all["ReturnsOnlyReleasedGroups"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.suspended(ta, "a")[0]
		w.task(ta, "b", taskapi.Succeeded)
		w.task(ta, "c", taskapi.Ready)
		w.task(ta, "d", taskapi.Failed)
		e := w.suspended(ta, "e")[0]
		f := w.suspended(ta, "f")[0]

		got := join(w, ta, taskapi.Eternal,
			[]string{"a", "b"}, // released
			[]string{},         // skipped
			[]string{"c", "d"}, // passes, but nothing to release
			[]string{"e"},      // released
			[]string{"f", "g"}, // g missing
		)
		wantStrings(t, "Join(ETERNAL, several groups)", got, []string{"a", "b", "e"})
		w.wantState(ta, a.Sequence, taskapi.Ready)
		w.wantState(ta, e.Sequence, taskapi.Ready)
		w.wantState(ta, f.Sequence, taskapi.Suspended)
	}

	all["SeveralGroupsEachIdentifierOnce"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ts := w.suspended(ta, "a", "b", "c", "d", "e")
		got := join(w, ta, taskapi.Singular,
			[]string{"a", "b", "a"}, // released; a once
			[]string{"c"},           // released
			[]string{"d", "x"},      // x missing
		)
		wantStrings(t, "Join(SINGULAR, several groups)", got, []string{"a", "b", "c"})
		for i, want := range []taskapi.State{taskapi.Ready, taskapi.Ready, taskapi.Ready, taskapi.Suspended, taskapi.Suspended} {
			w.wantState(ta, ts[i].Sequence, want)
		}

		// Overlapping groups: b is named by both released groups, once in the result.
		w.suspended(ta, "p", "r")
		w.task(ta, "q", taskapi.Ready)
		got = join(w, ta, taskapi.Eternal, []string{"p", "q"}, []string{"q", "r"})
		wantStrings(t, "Join(ETERNAL, overlapping groups)", got, []string{"p", "q", "r"})
	}

	all["NothingToJoin"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.suspended(ta, "a")
		before := w.snapshot(ta)
		wantStrings(t, "Join() without groups", join(w, ta, taskapi.Singular), nil)
		wantStrings(t, "Join() with an empty group", join(w, ta, taskapi.Eternal, []string{}), nil)
		wantStrings(t, "Join(unknown topic)", join(w, "nowhere", taskapi.Singular, []string{"a"}), nil)
		w.unchanged(before)
	}

	cases(t, all)
}
