package conformance

import (
	"maps"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testRoster checks taskapi.Roster: every registered owner, this one
// included, in byte order, with its last heartbeat (UTC, on the database
// clock, moving with Heartbeat) and its Active tasks per topic, which
// follow polls, completions, releases, expiry, purges and destroyed topics;
// owners that are not registered, or purged, are not listed; and the read
// works inside a caller's transaction, seeing its uncommitted polls and
// leaving the transaction usable. Every backend's repository implements it.
func testRoster[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	all["EveryRegisteredOwnerSorted"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		for _, name := range []string{"owner-c", "Owner-Z", "owner-b"} {
			w.owner(name)
		}
		if _, err := b.New("never-registered"); err != nil {
			t.Fatalf("New: %v", err)
		}
		got := w.roster(w.db)
		wantRosterOwners(t, got, []string{"Owner-Z", Owner, "owner-b", "owner-c"})
		for _, s := range got {
			ppcWantTime(t, "heartbeat of "+s.Owner, s.Heartbeat)
			if len(s.Held) != 0 {
				t.Errorf("%s holds %v, want nothing", s.Owner, s.Held)
			}
		}
	}

	all["HeartbeatsMove"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		ob := w.owner("owner-b")
		before := heartbeatOf(t, w.roster(w.db), "owner-b")
		time.Sleep(20 * time.Millisecond)
		w.must(ob.Heartbeat(w.ctx, w.db), "Heartbeat(owner-b)")
		after := w.roster(w.db)
		if hb := heartbeatOf(t, after, "owner-b"); !hb.After(before) {
			t.Errorf("heartbeat of owner-b after Heartbeat = %v, want after %v", hb, before)
		}
		if mine := heartbeatOf(t, after, Owner); !mine.Before(heartbeatOf(t, after, "owner-b")) {
			t.Errorf("heartbeat of %s = %v, want before owner-b's fresh one", Owner, mine)
		}
	}

	all["HeldFollowsTheActiveTasks"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		ob, oc := w.owner("owner-b"), w.owner("owner-c")
		a := w.pushIDs(ta, "a1", "a2", "a3", "a4")
		bt := w.pushIDs(tb, "b1", "b2")
		if polled, err := ob.Poll(w.ctx, w.db, ta, 3); err != nil || len(polled) != 3 {
			t.Fatalf("Poll(alpha, 3) by owner-b = %v, %v", polled, err)
		}
		w.pollExactly(ob, tb, bt[1])
		w.pollExactly(oc, tb, bt[0])
		mine := w.poll(ta, 1)
		w.wantHeld(map[string]map[string]int64{"owner-b": {ta: 3, tb: 1}, "owner-c": {tb: 1}, Owner: {ta: 1}})

		w.must(ob.Complete(w.ctx, w.db, ta, taskapi.Completion{Task: a[0], Decision: taskapi.Decision{Result: taskapi.Success}}),
			"Complete by owner-b")
		w.must(ob.Release(w.ctx, w.db, ta, a[1]), "Release by owner-b")
		w.complete(ta, taskapi.Failure, mine...)
		w.wantHeld(map[string]map[string]int64{"owner-b": {ta: 1, tb: 1}, "owner-c": {tb: 1}})

		// owner-c stays silent for longer than the expiry, owner-b not: a
		// second apart, generous on a loaded machine.
		time.Sleep(1500 * time.Millisecond)
		w.must(ob.Heartbeat(w.ctx, w.db), "Heartbeat(owner-b)")
		n, err := w.repo.Expire(w.ctx, w.db, time.Second)
		w.must(err, "Expire")
		wantN(t, "Expire of owner-c's task", n, 1)
		w.wantHeld(map[string]map[string]int64{"owner-b": {ta: 1, tb: 1}})

		_, err = w.repo.Destroy(w.ctx, w.db, tb)
		w.must(err, "Destroy(beta)")
		w.wantHeld(map[string]map[string]int64{"owner-b": {ta: 1}})
		w.must(w.repo.PurgeAll(w.ctx, w.db, ta), "PurgeAll(alpha)")
		w.wantHeld(map[string]map[string]int64{})
		wantRosterOwners(t, w.roster(w.db), []string{Owner, "owner-b", "owner-c"})
	}

	all["PurgedOwnersLeave"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.owner("owner-b")
		time.Sleep(200 * time.Millisecond)
		oc := w.owner("owner-c")
		w.pollExactly(oc, ta, w.pushIDs(ta, "x")[0])
		n, err := w.repo.PurgeOwners(w.ctx, w.db, 150*time.Millisecond)
		w.must(err, "PurgeOwners")
		wantN(t, "PurgeOwners", n, 1)
		wantRosterOwners(t, w.roster(w.db), []string{Owner, "owner-c"})
	}

	all["InsideATransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ob := w.owner("owner-b")
		w.pushIDs(ta, "x", "y")
		tx, end := w.begin()
		if polled, err := ob.Poll(w.ctx, tx, ta, 2); err != nil || len(polled) != 2 {
			t.Fatalf("Poll in a transaction = %v, %v", polled, err)
		}
		got := w.roster(tx)
		if held := heldOf(got)["owner-b"]; !maps.Equal(held, map[string]int64{ta: 2}) {
			t.Errorf("inside the transaction owner-b holds %v, want %v", held, map[string]int64{ta: 2})
		}
		w.pushOn(tx, ta, taskapi.Append, taskapi.Creation{Identifier: "z"}) // still usable
		end(false)
		w.wantHeld(map[string]map[string]int64{})
	}

	cases(t, all)
}

// roster reads the roster on h and fails the test on error, or when the
// repository does not implement taskapi.Roster.
func (w *world[Tx]) roster(h Tx) []taskapi.OwnerStatus {
	w.t.Helper()
	if r, ok := w.repo.(taskapi.Roster[Tx]); ok {
		got, err := r.Roster(w.ctx, h)
		w.must(err, "Roster")
		return got
	}
	w.t.Fatalf("%T does not implement taskapi.Roster", w.repo)
	return nil
}

// wantHeld fails the test unless the owners hold what want says, and no
// other owner holds anything.
func (w *world[Tx]) wantHeld(want map[string]map[string]int64) {
	w.t.Helper()
	got := heldOf(w.roster(w.db))
	if !maps.EqualFunc(got, want, func(a, b map[string]int64) bool { return maps.Equal(a, b) }) {
		w.t.Errorf("Roster holds %v, want %v", got, want)
	}
}

// heldOf returns what each owner of roster holds, leaving out those that
// hold nothing.
func heldOf(roster []taskapi.OwnerStatus) map[string]map[string]int64 {
	held := map[string]map[string]int64{}
	for _, s := range roster {
		if len(s.Held) > 0 {
			held[s.Owner] = s.Held
		}
	}
	return held
}

// heartbeatOf returns the heartbeat of owner in roster, or fails t.
func heartbeatOf(t *testing.T, roster []taskapi.OwnerStatus, owner string) time.Time {
	t.Helper()
	for _, s := range roster {
		if s.Owner == owner {
			return s.Heartbeat
		}
	}
	t.Fatalf("Roster has no owner %q", owner)
	return time.Time{}
}

// wantRosterOwners fails t unless roster lists exactly want, in order.
func wantRosterOwners(t *testing.T, roster []taskapi.OwnerStatus, want []string) {
	t.Helper()
	got := make([]string, len(roster))
	for i, s := range roster {
		got[i] = s.Owner
	}
	wantStrings(t, "Roster owners", got, want)
}
