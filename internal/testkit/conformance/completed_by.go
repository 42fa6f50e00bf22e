package conformance

import (
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testCompletionBounded checks taskapi.CompletionBounded, which every backend's repository
// implements: a bulk revival, reassignment or purge bounded by the highest
// sequence and the time an operator's confirmation saw changes the tasks
// the confirmation counted and none that were pushed or completed after
// it; a zero time bounds by the span alone.
func testCompletionBounded[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["ReviveLeavesOutLaterTasks"] = func(t *testing.T) {
		w, c := confirmedThenChanged(t, b)
		revivals, err := extension[taskapi.CompletionBounded[Tx]](t, w.repo).ReviveCompletedBy(w.ctx, w.db, "t", taskapi.ReviveReset, taskapi.Failed, c.span, c.completedBy, 100)
		w.must(err, "ReviveCompletedBy")
		if len(revivals) != 1 || revivals[0].Previous != c.confirmed {
			t.Errorf("ReviveCompletedBy revived %v, want only task %d", revivals, c.confirmed.Sequence)
		}
		wantLate(w, c)
	}
	all["ReassignLeavesOutLaterTasks"] = func(t *testing.T) {
		w, c := confirmedThenChanged(t, b)
		n, err := extension[taskapi.CompletionBounded[Tx]](t, w.repo).ReassignCompletedBy(w.ctx, w.db, "t", taskapi.Failed, taskapi.Success, c.span, c.completedBy)
		w.must(err, "ReassignCompletedBy")
		wantN(t, "ReassignCompletedBy", n, 1)
		w.want("t", c.confirmed.Sequence, taskapi.Succeeded, taskapi.Failed)
		wantLate(w, c)
	}
	all["PurgeLeavesOutLaterTasks"] = func(t *testing.T) {
		w, c := confirmedThenChanged(t, b)
		n, err := extension[taskapi.CompletionBounded[Tx]](t, w.repo).PurgeCompletedBy(w.ctx, w.db, "t", c.span, c.completedBy)
		w.must(err, "PurgeCompletedBy")
		wantN(t, "PurgeCompletedBy", n, 1)
		w.missing("t", c.confirmed.Sequence)
		wantLate(w, c)
	}
	all["PurgeTakesUncompletedTasksWithinTheSpan"] = func(t *testing.T) {
		w, c := confirmedThenChanged(t, b)
		n, err := extension[taskapi.CompletionBounded[Tx]](t, w.repo).PurgeCompletedBy(w.ctx, w.db, "t", c.span, c.completedBy, taskapi.Ready)
		w.must(err, "PurgeCompletedBy(Ready)")
		wantN(t, "PurgeCompletedBy(Ready)", n, 1)
		w.missing("t", c.ready.Sequence)
		w.want("t", c.pushed.Sequence, taskapi.Ready, taskapi.Ready)
	}
	all["ZeroTimeBoundsBySpanAlone"] = func(t *testing.T) {
		w, c := confirmedThenChanged(t, b)
		n, err := extension[taskapi.CompletionBounded[Tx]](t, w.repo).ReassignCompletedBy(w.ctx, w.db, "t", taskapi.Failed, taskapi.Success, c.span, time.Time{})
		w.must(err, "ReassignCompletedBy(zero time)")
		wantN(t, "ReassignCompletedBy(zero time)", n, 2)
		w.want("t", c.finished.Sequence, taskapi.Succeeded, taskapi.Failed)
		w.want("t", c.failed.Sequence, taskapi.Failed, taskapi.Ready)
	}
	cases(t, all)
}

// confirmation is a topic "t" as a confirmation saw it, then changed: confirmed
// was FAILED then; finished was READY then and FAILED since; ready is
// READY still; pushed and failed were pushed after the confirmation (failed
// FAILED since). span and completedBy are the confirmation's bound.
type confirmation struct {
	confirmed, finished, ready, pushed, failed taskapi.Task
	span                                       taskapi.Range
	completedBy                                time.Time
}

// confirmedThenChanged builds a confirmation.
func confirmedThenChanged[Tx any](t *testing.T, b Backend[Tx]) (*world[Tx], confirmation) {
	t.Helper()
	w := worldOf(setup(t, b, "t"))
	var c confirmation
	c.confirmed = w.task("t", "confirmed", taskapi.Failed)
	c.finished = w.task("t", "finished", taskapi.Ready)
	c.ready = w.task("t", "ready", taskapi.Ready)
	completedBy, err := extension[taskapi.Clock[Tx]](t, w.repo).Now(w.ctx, w.db)
	w.must(err, "Now")
	c.span, c.completedBy = taskapi.Range{From: taskapi.Inception, To: c.ready.Sequence}, completedBy
	time.Sleep(tick) // the completions below come later on any clock's resolution
	polled := w.poll("t", 1)
	if len(polled) != 1 || polled[0] != c.finished {
		t.Fatalf("Poll = %v, want task %d", polled, c.finished.Sequence)
	}
	w.complete("t", taskapi.Failure, c.finished)
	c.pushed = w.pushIDs("t", "pushed")[0]
	c.failed = w.task("t", "failed", taskapi.Failed)
	return w, c
}

// wantLate fails the test unless the tasks completed or pushed after the
// confirmation are as they were: finished and failed in state, ready and
// pushed READY.
func wantLate[Tx any](w *world[Tx], c confirmation) {
	w.t.Helper()
	w.want("t", c.finished.Sequence, taskapi.Failed, taskapi.Ready)
	w.want("t", c.failed.Sequence, taskapi.Failed, taskapi.Ready)
	w.want("t", c.ready.Sequence, taskapi.Ready, taskapi.Ready)
	w.want("t", c.pushed.Sequence, taskapi.Ready, taskapi.Ready)
}
