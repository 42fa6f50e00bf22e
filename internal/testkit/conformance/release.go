package conformance

import (
	"errors"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testRelease checks Release: Active tasks of this owner become Ready as if
// they had not been polled, keeping descent, output and completion time;
// any task that is not Active and owned by this owner refuses the whole
// call with a StateError that names it.
func testRelease[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["ActiveTasksBecomeReadyAsIfNeverPolled"] = func(t *testing.T) {
		w := worldOf(setup(t, b, topic))
		plain := w.task(topic, "plain", taskapi.Active)
		// A task that failed and was reset keeps its descent when released.
		reset := w.task(topic, "reset", taskapi.Failed)
		w.reviveTasks(topic, taskapi.ReviveReset, reset)
		w.pollExactly(w.repo, topic, reset)
		before := map[int64]taskapi.Info{plain.Sequence: w.info(topic, plain.Sequence), reset.Sequence: w.info(topic, reset.Sequence)}

		w.must(w.repo.Release(w.ctx, w.db, topic, plain, reset, plain), "Release")
		for sequence, was := range before {
			info := w.info(topic, sequence)
			if info.State != taskapi.Ready || info.Owner != "" || info.Descent != was.Descent ||
				info.Output != was.Output || !info.Completed.Equal(was.Completed) || !info.Created.Equal(was.Created) {
				t.Errorf("released task is %s, want READY without owner, the rest as before: %s",
					describe([]taskapi.Info{info}), describe([]taskapi.Info{was}))
			}
		}
		// Released tasks are polled again, in their place.
		again := w.poll(topic, 10)
		wantSeqs(t, "poll after Release", seqsOf(again...), seqsOf(plain, reset))
	}

	all["AnyTaskNotActiveAndOwnedRefusesTheCall"] = func(t *testing.T) {
		w := worldOf(setup(t, b, topic))
		mine := w.task(topic, "mine", taskapi.Active)
		ready := w.task(topic, "ready", taskapi.Ready)
		done := w.task(topic, "done", taskapi.Succeeded)
		theirs := w.push(topic, taskapi.Append, taskapi.Creation{Identifier: "theirs"})[0]
		w.pollExactly(w.expiring(), topic, theirs)
		before := w.snapshot(topic)
		for name, refused := range map[string]taskapi.Task{"Ready": ready, "Succeeded": done, "owned by another": theirs} {
			err := w.repo.Release(w.ctx, w.db, topic, mine, refused)
			wantErr(t, err, taskapi.ErrNotActive)
			var stale *taskapi.StateError
			if !errors.As(err, &stale) || len(stale.Sequences) != 1 || stale.Sequences[0] != refused.Sequence {
				t.Errorf("Release of a task %s = %v, want a StateError naming task %d only", name, err, refused.Sequence)
			}
			if !w.unchanged(before) {
				t.Errorf("a refused Release of a task %s changed the topic", name)
			}
		}
		wantErr(t, w.repo.Release(w.ctx, w.db, "nowhere", mine), taskapi.ErrNotActive)
		wantErr(t, w.repo.Release(w.ctx, w.db, "", mine), taskapi.ErrInvalidArgument)
		w.must(w.repo.Release(w.ctx, w.db, topic), "Release of no tasks")
		if !w.unchanged(before) {
			t.Error("Release of no tasks changed the topic")
		}
	}

	all["RolledBackWithTheCallersTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, topic))
		task := w.task(topic, "a", taskapi.Active)
		tx, end := w.begin()
		w.must(w.repo.Release(w.ctx, tx, topic, task), "Release in a transaction")
		if got := w.stateOn(tx, topic, task.Sequence); got != taskapi.Ready {
			t.Errorf("released task is %v in the transaction, want READY", got)
		}
		end(false)
		w.want(topic, task.Sequence, taskapi.Active, taskapi.Ready)
	}

	cases(t, all)
}
