package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testAtomicity checks that every call is atomic and leaves the caller's
// transaction usable: inside a transaction from b.Begin a failing Push,
// Complete, Reassign or ReviveTasks returns its error, changes nothing, and
// the work before and after it in the same transaction commits; rolling the
// caller's transaction back discards the repository's work; and failing calls
// on the pool handle change nothing.
func testAtomicity[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	all["FailingPushInTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		tx, end := w.begin()
		first := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "a"})
		pushed, err := w.repo.Push(w.ctx, tx, "nowhere", taskapi.Append, taskapi.Creation{Identifier: "lost"})
		wantErr(t, err, taskapi.ErrUnknownTopic)
		if len(pushed) != 0 {
			t.Errorf("failed Push returned %v", pushed)
		}
		_, err = w.repo.Push(w.ctx, tx, ta, taskapi.Append, taskapi.Creation{Identifier: "b"}, taskapi.Creation{Identifier: "bad\x00"})
		wantErr(t, err, taskapi.ErrInvalidArgument)
		second := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "c"})
		end(true)

		infos := w.all(ta)
		wantSeqs(t, "tasks after commit", infoSequences(infos), seqsOf(append(first, second...)...))
		for _, info := range infos {
			if info.State != taskapi.Ready {
				t.Errorf("task %d is %v, want READY", info.Sequence, info.State)
			}
		}
		w.wantTopics(ta)
	}

	all["FailingCompleteInTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		active := w.task(ta, "a", taskapi.Active)
		ready := w.task(ta, "r", taskapi.Ready)
		tx, end := w.begin()
		err := w.repo.Complete(w.ctx, tx, ta,
			taskapi.Completion{Task: active, Decision: taskapi.Decision{Result: taskapi.Success}},
			taskapi.Completion{Task: ready, Decision: taskapi.Decision{Result: taskapi.Failure}},
		)
		wantErr(t, err, taskapi.ErrNotActive)
		if got := w.stateOn(tx, ta, active.Sequence); got != taskapi.Active {
			t.Errorf("after the failed Complete the active task is %v in the transaction, want ACTIVE", got)
		}
		w.must(w.repo.Complete(w.ctx, tx, ta, taskapi.Completion{Task: active, Decision: taskapi.Decision{Result: taskapi.Success, Output: "done"}}),
			"Complete in the transaction after a failure")
		later := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "later"})[0]
		end(true)

		if info := w.want(ta, active.Sequence, taskapi.Succeeded, taskapi.Ready); info.Output != "done" {
			t.Errorf("completed task output = %q, want done", info.Output)
		}
		w.want(ta, ready.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, later.Sequence, taskapi.Ready, taskapi.Ready)
		wantSeqs(t, "tasks", infoSequences(w.all(ta)), seqsOf(active, ready, later))
	}

	all["FailingReassignInTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		failed := w.task(ta, "f", taskapi.Failed)
		ready := w.task(ta, "r", taskapi.Ready)
		tx, end := w.begin()
		err := w.repo.Reassign(w.ctx, tx, ta,
			taskapi.Assignment{Task: failed, Result: taskapi.Success},
			taskapi.Assignment{Task: ready, Result: taskapi.Success},
		)
		wantErr(t, err, taskapi.ErrStateMismatch)
		if got := w.stateOn(tx, ta, failed.Sequence); got != taskapi.Failed {
			t.Errorf("after the failed Reassign the task is %v in the transaction, want FAILED", got)
		}
		w.must(w.repo.Reassign(w.ctx, tx, ta, taskapi.Assignment{Task: failed, Result: taskapi.Filter}),
			"Reassign in the transaction after a failure")
		later := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "later"})[0]
		end(true)

		w.want(ta, failed.Sequence, taskapi.Filtered, taskapi.Failed)
		w.want(ta, ready.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, later.Sequence, taskapi.Ready, taskapi.Ready)
	}

	all["FailingReviveTasksInTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		failed := w.task(ta, "f", taskapi.Failed)
		ready := w.task(ta, "r", taskapi.Ready)
		tx, end := w.begin()
		revivals, err := w.repo.ReviveTasks(w.ctx, tx, ta, taskapi.ReviveAppend, failed, ready)
		wantErr(t, err, taskapi.ErrStateMismatch)
		if len(revivals) != 0 {
			t.Errorf("failed ReviveTasks returned %+v", revivals)
		}
		if got := w.stateOn(tx, ta, failed.Sequence); got != taskapi.Failed {
			t.Errorf("after the failed ReviveTasks the task is %v in the transaction, want FAILED", got)
		}
		if n := w.countOn(tx, ta); n != 2 {
			t.Errorf("after the failed ReviveTasks the topic holds %d tasks in the transaction, want 2", n)
		}
		revivals, err = w.repo.ReviveTasks(w.ctx, tx, ta, taskapi.ReviveAppend, failed)
		w.must(err, "ReviveTasks in the transaction after a failure")
		if len(revivals) != 1 {
			t.Fatalf("ReviveTasks = %+v, want one revival", revivals)
		}
		later := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "later"})[0]
		end(true)

		w.want(ta, failed.Sequence, taskapi.Recreated, taskapi.Failed)
		w.want(ta, revivals[0].Current.Sequence, taskapi.Ready, taskapi.Ready)
		w.want(ta, ready.Sequence, taskapi.Ready, taskapi.Ready)
		wantSeqs(t, "tasks", infoSequences(w.all(ta)), seqsOf(failed, ready, revivals[0].Current, later))
	}

	all["MixedWorkInTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		tx, end := w.begin()
		pushed := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "a"}, taskapi.Creation{Identifier: "b"})
		a, bt := pushed[0], pushed[1]
		_, err := w.repo.Push(w.ctx, tx, "nowhere", taskapi.Append, taskapi.Creation{Identifier: "x"})
		wantErr(t, err, taskapi.ErrUnknownTopic)
		polled, err := w.repo.Poll(w.ctx, tx, ta, 1)
		w.must(err, "Poll in the transaction")
		wantSeqs(t, "Poll in the transaction", seqsOf(polled...), seqsOf(a))
		err = w.repo.Complete(w.ctx, tx, ta, taskapi.Completion{Task: bt, Decision: taskapi.Decision{Result: taskapi.Success}})
		wantErr(t, err, taskapi.ErrNotActive)
		w.must(w.repo.Complete(w.ctx, tx, ta, taskapi.Completion{Task: a, Decision: taskapi.Decision{Result: taskapi.Success}}),
			"Complete in the transaction")
		err = w.repo.Reassign(w.ctx, tx, ta, taskapi.Assignment{Task: bt, Result: taskapi.Failure})
		wantErr(t, err, taskapi.ErrStateMismatch)
		_, err = w.repo.ReviveTasks(w.ctx, tx, ta, taskapi.ReviveReset, a, bt)
		wantErr(t, err, taskapi.ErrStateMismatch)
		_, err = w.repo.ReviveTasks(w.ctx, tx, ta, taskapi.ReviveReset, a)
		w.must(err, "ReviveTasks in the transaction")
		end(true)

		w.want(ta, a.Sequence, taskapi.Ready, taskapi.Succeeded)
		w.want(ta, bt.Sequence, taskapi.Ready, taskapi.Ready)
		wantSeqs(t, "tasks", infoSequences(w.all(ta)), seqsOf(a, bt))
	}

	all["RollbackDiscards"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ready := w.task(ta, "r", taskapi.Ready)
		failed := w.task(ta, "f", taskapi.Failed)
		before := w.snapshot(ta)
		newcomer, err := b.New("owner-new")
		w.must(err, "New(owner-new)")

		tx, end := w.begin()
		w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "x"})
		polled, err := w.repo.Poll(w.ctx, tx, ta, 1)
		w.must(err, "Poll in the transaction")
		wantSeqs(t, "Poll in the transaction", seqsOf(polled...), seqsOf(ready))
		w.must(w.repo.Complete(w.ctx, tx, ta, taskapi.Completion{Task: ready, Decision: taskapi.Decision{Result: taskapi.Failure}}),
			"Complete in the transaction")
		_, err = w.repo.ReviveTasks(w.ctx, tx, ta, taskapi.ReviveAppend, failed)
		w.must(err, "ReviveTasks in the transaction")
		created, err := w.repo.Initialize(w.ctx, tx, tb)
		w.must(err, "Initialize in the transaction")
		if !created {
			t.Errorf("Initialize in the transaction = false, want true")
		}
		w.pushOn(tx, tb, taskapi.Append, taskapi.Creation{Identifier: "y"})
		_, err = newcomer.Register(w.ctx, tx)
		w.must(err, "Register in the transaction")
		end(false)

		w.unchanged(before)
		w.wantTopics(ta)
		wantStrings(t, "Owners after rollback", w.others(time.Hour), nil)
		// Everything can be done again, for real.
		created, err = w.repo.Initialize(w.ctx, w.db, tb)
		if err != nil || !created {
			t.Errorf("Initialize after rollback = %v, %v; want true", created, err)
		}
		w.pushIDs(tb, "y")
	}

	all["NoCallEndsTheCallersTransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		done := w.task(ta, "done", taskapi.Failed)
		doneBefore := w.info(ta, done.Sequence)
		w.pushIDs(tb, "kept")
		expirer := w.expiring()
		tx, end := w.begin()
		mine := w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "mine"})
		ctx, repo := w.ctx, w.repo
		for _, c := range []struct {
			name string
			call func() error
		}{
			{"Refresh", func() error { return repo.Refresh(ctx, tx) }},
			{"Initialize", func() error { _, err := repo.Initialize(ctx, tx, "gamma"); return err }},
			{"PurgeAll", func() error { return repo.PurgeAll(ctx, tx, tb) }},
			{"Register", func() error { _, err := repo.Register(ctx, tx); return err }},
			{"Expire", func() error { _, err := expirer.Expire(ctx, tx, 0); return err }},
			{"PurgeOwners", func() error { _, err := repo.PurgeOwners(ctx, tx, 0); return err }},
			{"ReviveTasks", func() error { _, err := repo.ReviveTasks(ctx, tx, ta, taskapi.ReviveAppend, done); return err }},
			{"Destroy", func() error { _, err := repo.Destroy(ctx, tx, "gamma"); return err }},
		} {
			// A call may refuse the transaction (MySQL's ANALYZE TABLE
			// would commit it), never end it.
			if err := c.call(); err != nil && !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("%s in the transaction: %v", c.name, err)
			}
			if got := w.stateOn(tx, ta, mine[0].Sequence); got != taskapi.Ready {
				t.Fatalf("after %s the transaction's own push is %v, want READY", c.name, got)
			}
		}
		end(false)
		w.missing(ta, mine[0].Sequence)
		if after := w.info(ta, done.Sequence); !sameInfo(after, doneBefore) {
			t.Errorf("the task that ReviveTasks recreated in the rolled back transaction is %s, want %s as before",
				describe([]taskapi.Info{after}), describe([]taskapi.Info{doneBefore}))
		}
		if n := len(w.all(tb)); n != 1 {
			t.Errorf("topic %s has %d tasks after the rolled back PurgeAll, want 1", tb, n)
		}
		w.wantTopics(ta, tb)
		w.must(repo.Refresh(ctx, w.db), "Refresh on the pool")
	}

	all["FailingCallsOnPool"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		active := w.task(ta, "a", taskapi.Active)
		ready := w.task(ta, "r", taskapi.Ready)
		failed := w.task(ta, "f", taskapi.Failed)
		w.suspended(ta, "s")
		before := w.all(ta)
		topics := []string{ta}
		ctx, db, repo := w.ctx, w.db, w.repo
		calls := []struct {
			name   string
			target error
			call   func() error
		}{
			{"Push to an unknown topic", taskapi.ErrUnknownTopic, func() error {
				_, err := repo.Push(ctx, db, "nowhere", taskapi.Append, taskapi.Creation{Identifier: "x"})
				return err
			}},
			{"Replace with one bad creation", taskapi.ErrInvalidArgument, func() error {
				_, err := repo.Push(ctx, db, ta, taskapi.Replace,
					taskapi.Creation{Identifier: "r"}, taskapi.Creation{Identifier: "f"}, taskapi.Creation{Identifier: ""})
				return err
			}},
			{"Complete with one task not active", taskapi.ErrNotActive, func() error {
				return repo.Complete(ctx, db, ta,
					taskapi.Completion{Task: active, Decision: taskapi.Decision{Result: taskapi.Success}},
					taskapi.Completion{Task: ready, Decision: taskapi.Decision{Result: taskapi.Success}})
			}},
			{"Reassign with one task ready", taskapi.ErrStateMismatch, func() error {
				return repo.Reassign(ctx, db, ta,
					taskapi.Assignment{Task: failed, Result: taskapi.Success},
					taskapi.Assignment{Task: ready, Result: taskapi.Success})
			}},
			{"ReviveTasks with one task active", taskapi.ErrStateMismatch, func() error {
				_, err := repo.ReviveTasks(ctx, db, ta, taskapi.ReviveReplace, failed, active)
				return err
			}},
			{"Join with one bad group", taskapi.ErrInvalidArgument, func() error {
				_, err := repo.Join(ctx, db, ta, taskapi.Eternal, []string{"s"}, []string{"a\xff"})
				return err
			}},
		}
		for _, c := range calls {
			w.rejected(c.name, c.call(), c.target, ta, topics, &before)
		}
		w.must(repo.Heartbeat(ctx, db), "Heartbeat after the failed calls")
	}

	cases(t, all)
}
