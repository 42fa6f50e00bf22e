package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testClock checks that times are stored and compared at one precision, the
// microsecond, on every backend: a task created after a time the caller took
// is found after it, whatever the database's clock resolution. And the
// database's clock as taskapi.Clock reads it, which every backend's
// repository must implement: in UTC, to the microsecond, the clock that
// created times are on, read at the statement.
func testClock[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["NowLiesBetweenTheTasksCreatedAroundIt"] = func(t *testing.T) {
		e := setup(t, b, "t")
		clock := extension[taskapi.Clock[Tx]](t, e.repo)
		for round := range 50 {
			before := e.push("t", taskapi.Append, taskapi.Creation{Identifier: "x", Suspended: true})[0]
			now, err := clock.Now(e.ctx, e.db)
			if err != nil {
				t.Fatalf("round %d: Now: %v", round, err)
			}
			after := e.push("t", taskapi.Append, taskapi.Creation{Identifier: "x", Suspended: true})[0]
			if now.Location() != time.UTC || !now.Equal(now.Truncate(time.Microsecond)) {
				t.Fatalf("round %d: Now = %v, want a time in UTC to the microsecond", round, now)
			}
			created, next := e.info("t", before.Sequence).Created, e.info("t", after.Sequence).Created
			if now.Before(created) || next.Before(now) {
				t.Fatalf("round %d: Now = %v, want it at or after %v, the creation of the task pushed before, "+
					"and at or before %v, that of the task pushed after", round, now, created, next)
			}
		}
	}

	all["NowIsTheMomentOfTheStatement"] = func(t *testing.T) {
		e := setup(t, b, "t")
		clock := extension[taskapi.Clock[Tx]](t, e.repo)
		w := worldOf(e)
		tx, end := w.begin()
		first, err := clock.Now(e.ctx, tx)
		w.must(err, "Now in a transaction")
		time.Sleep(tick)
		second, err := clock.Now(e.ctx, tx)
		w.must(err, "Now again in the transaction")
		end(true)
		if !second.After(first) {
			t.Errorf("Now in one transaction %v apart = %v, then %v; want the moment of each statement", tick, first, second)
		}
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		if _, err := clock.Now(ctx, e.db); !errors.Is(err, context.Canceled) {
			t.Errorf("Now with a cancelled context: error = %v, want %v", err, context.Canceled)
		}
	}

	all["TasksCreatedJustAfterATimeAreAfterIt"] = func(t *testing.T) {
		e := setup(t, b, "t")
		for round := range 50 { // SQLite's own clock has milliseconds: most rounds fell within one
			at := time.Now()
			task := e.push("t", taskapi.Append, taskapi.Creation{Identifier: "x", Suspended: true})[0]
			created := e.info("t", task.Sequence).Created
			if created.Before(at.Truncate(time.Microsecond)) {
				t.Fatalf("round %d: task created at %v, before %v, the time taken before its push", round, created, at)
			}
			if first, err := e.repo.Resolve(e.ctx, e.db, at, false); err != nil || first > task.Sequence {
				t.Fatalf("round %d: Resolve(%v, following) = %d, %v; want at most %d", round, at, first, err, task.Sequence)
			}
			infos, err := taskapi.PageAt(e.ctx, e.repo, e.db, "t", taskapi.Listing{}, at, 1, taskapi.Forward)
			if err != nil || len(infos) != 1 || infos[0].Sequence != task.Sequence {
				t.Fatalf("round %d: PageAt(%v, Forward) = %v, %v; want task %d", round, at, infos, err, task.Sequence)
			}
			if n, err := taskapi.PurgeBefore(e.ctx, e.repo, e.db, "t", at); err != nil || n != min(int64(round), 1) {
				t.Fatalf("round %d: PurgeBefore(%v) = %d, %v; want the task of the round before purged, this one kept", round, at, n, err)
			}
			if _, ok, err := e.repo.Lookup(e.ctx, e.db, "t", task.Sequence); err != nil || !ok {
				t.Fatalf("round %d: the task created after %v was purged (%v)", round, at, err)
			}
		}
	}

	all["TasksCreatedJustBeforeATimeAreBeforeIt"] = func(t *testing.T) {
		e := setup(t, b, "t")
		for round := range 50 {
			task := e.push("t", taskapi.Append, taskapi.Creation{Identifier: "x", Suspended: true})[0]
			at := time.Now()
			if last, err := e.repo.Resolve(e.ctx, e.db, at, true); err != nil || last < task.Sequence {
				t.Fatalf("round %d: Resolve(%v, preceding) = %d, %v; want at least %d", round, at, last, err, task.Sequence)
			}
			if n, err := taskapi.PurgeBefore(e.ctx, e.repo, e.db, "t", at); err != nil || n != 1 {
				t.Fatalf("round %d: PurgeBefore(%v) = %d, %v; want the task pushed before purged", round, at, n, err)
			}
		}
	}

	cases(t, all)
}
