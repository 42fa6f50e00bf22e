package conformance

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testOwners checks owners and topics: Register and Heartbeat, Owners (this
// owner excluded, byte order, sub-second windows), Expire (other silent
// owners' Active tasks only, descent unchanged, count returned), PurgeOwners
// (silent owners without Active tasks only), Initialize and Topics (byte
// order), and that negative durations are rejected with ErrInvalidArgument.
func testOwners[Tx any](t *testing.T, b Backend[Tx]) {
	const ta = "alpha"
	// silence is how long a case lets an owner stay silent, and short the
	// duration it must exceed; both are below a second, which the repository
	// must honour. short is generous, since a fresh owner must stay within
	// it while the case goes on, on a machine busy with other work (at 150
	// ms, a case beside the other suites saw its fresh owner purged); the
	// sleep guarantees the silent side.
	const (
		silence = 700 * time.Millisecond
		short   = 600 * time.Millisecond
	)
	all := map[string]func(t *testing.T){}

	all["RegisterNewThenExisting"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		repo, err := b.New("owner-b")
		w.must(err, "New(owner-b)")
		if repo.Owner() != "owner-b" {
			t.Errorf("Owner() = %q, want owner-b", repo.Owner())
		}
		for i, want := range []bool{true, false} {
			created, err := repo.Register(w.ctx, w.db)
			w.must(err, "Register #%d", i+1)
			if created != want {
				t.Errorf("Register #%d = %v, want %v", i+1, created, want)
			}
		}
		created, err := w.repo.Register(w.ctx, w.db) // registered by setup
		w.must(err, "Register(%s)", Owner)
		if created {
			t.Errorf("Register of the owner setup registered = true, want false")
		}
	}

	all["HeartbeatNeedsRegistration"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		w.must(w.repo.Heartbeat(w.ctx, w.db), "Heartbeat of a registered owner")
		ghost, err := b.New("ghost")
		w.must(err, "New(ghost)")
		wantErr(t, ghost.Heartbeat(w.ctx, w.db), taskapi.ErrUnknownOwner)
		wantStrings(t, "Owners after a failed heartbeat", w.others(time.Hour), nil)
		if created, err := ghost.Register(w.ctx, w.db); err != nil || !created {
			t.Fatalf("Register(ghost) = %v, %v; want true", created, err)
		}
		w.must(ghost.Heartbeat(w.ctx, w.db), "Heartbeat after Register")
		wantStrings(t, "Owners", w.others(time.Hour), []string{"ghost"})
	}

	all["OwnersSortedWithoutSelf"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		wantStrings(t, "Owners with no other owner", w.others(time.Hour), nil)
		names := []string{"owner-c", "owner-b", "Owner-Z", "owner-b2"}
		repos := map[string]taskapi.Repository[Tx]{}
		for _, name := range names {
			repos[name] = w.owner(name)
		}
		// Byte order: upper case before lower case.
		wantStrings(t, "Owners", w.others(time.Hour), []string{"Owner-Z", "owner-b", "owner-b2", "owner-c"})
		got, err := repos["owner-b"].Owners(w.ctx, w.db, time.Hour)
		w.must(err, "Owners by owner-b")
		wantStrings(t, "Owners by owner-b", got, []string{"Owner-Z", Owner, "owner-b2", "owner-c"})
	}

	all["OwnersHonourSubSecondWindows"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		ob := w.owner("owner-b")
		oc := w.owner("owner-c")
		time.Sleep(silence)
		w.owner("owner-d")
		wantStrings(t, "Owners(short)", w.others(short), []string{"owner-d"})
		wantStrings(t, "Owners(10s)", w.others(10*time.Second), []string{"owner-b", "owner-c", "owner-d"})

		w.must(ob.Heartbeat(w.ctx, w.db), "Heartbeat(owner-b)")
		created, err := oc.Register(w.ctx, w.db) // registering again refreshes the heartbeat
		w.must(err, "Register(owner-c) again")
		if created {
			t.Errorf("Register(owner-c) again = true, want false")
		}
		wantStrings(t, "Owners(short) after heartbeats", w.others(short), []string{"owner-b", "owner-c", "owner-d"})
	}

	all["ExpireSilentOthers"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ob := w.owner("owner-b")
		// f has descent Failed: expiry must not change it.
		f := w.task(ta, "f", taskapi.Failed)
		w.reviveTasks(ta, taskapi.ReviveReset, f)
		pushed := w.pushIDs(ta, "a", "c")
		theirs, err := ob.Poll(w.ctx, w.db, ta, 2)
		w.must(err, "Poll by owner-b")
		wantSeqs(t, "Poll by owner-b", seqsOf(theirs...), seqsOf(f, pushed[0]))
		mine := w.poll(ta, 1)
		wantSeqs(t, "Poll by "+Owner, seqsOf(mine...), seqsOf(pushed[1]))
		time.Sleep(silence)

		n, err := w.repo.Expire(w.ctx, w.db, short)
		w.must(err, "Expire(short)")
		wantN(t, "Expire(short)", n, 2)
		for _, x := range []struct {
			task    taskapi.Task
			descent taskapi.State
		}{{f, taskapi.Failed}, {pushed[0], taskapi.Ready}} {
			if info := w.want(ta, x.task.Sequence, taskapi.Expired, x.descent); info.Owner != "owner-b" {
				t.Errorf("expired task %d has owner %q, want owner-b kept", x.task.Sequence, info.Owner)
			}
		}
		// This owner is silent too, but its own tasks are never expired.
		if info := w.want(ta, pushed[1].Sequence, taskapi.Active, taskapi.Ready); info.Owner != Owner {
			t.Errorf("own task has owner %q, want %q", info.Owner, Owner)
		}
		n, err = w.repo.Expire(w.ctx, w.db, 0)
		w.must(err, "Expire(0)")
		wantN(t, "Expire(0) with only own tasks Active", n, 0)
		w.wantState(ta, pushed[1].Sequence, taskapi.Active)
	}

	all["ExpireSparesFreshOwners"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ob := w.owner("owner-b")
		oc := w.owner("owner-c")
		pushed := w.pushIDs(ta, "a", "c")
		w.pollExactly(oc, ta, pushed[1])
		w.pollExactly(ob, ta, pushed[0])

		n, err := w.repo.Expire(w.ctx, w.db, 10*time.Second)
		w.must(err, "Expire(10s)")
		wantN(t, "Expire(10s) of fresh owners", n, 0)
		time.Sleep(silence)
		w.must(ob.Heartbeat(w.ctx, w.db), "Heartbeat(owner-b)")

		n, err = w.repo.Expire(w.ctx, w.db, short)
		w.must(err, "Expire(short)")
		wantN(t, "Expire(short)", n, 1)
		w.wantState(ta, pushed[0].Sequence, taskapi.Active)
		w.wantState(ta, pushed[1].Sequence, taskapi.Expired)
	}

	all["PurgeOwnersKeepsHoldersOfActiveTasks"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ob := w.owner("owner-b") // never polls
		od := w.owner("owner-d") // completes its task
		oe := w.owner("owner-e") // its task expires
		pushed := w.pushIDs(ta, "y", "z")
		w.pollExactly(oe, ta, pushed[1])
		w.pollExactly(od, ta, pushed[0])
		w.must(od.Complete(w.ctx, w.db, ta, taskapi.Completion{Task: pushed[0], Decision: taskapi.Decision{Result: taskapi.Success}}),
			"Complete by owner-d")
		time.Sleep(silence)
		oc := w.owner("owner-c") // holds an Active task, silent by the purge
		x := w.pushIDs(ta, "x")[0]
		w.pollExactly(oc, ta, x)
		n, err := w.repo.Expire(w.ctx, w.db, short)
		w.must(err, "Expire(short)")
		wantN(t, "Expire(short)", n, 1) // owner-e's task
		time.Sleep(silence)
		of := w.owner("owner-f") // fresh

		n, err = w.repo.PurgeOwners(w.ctx, w.db, short)
		w.must(err, "PurgeOwners(short)")
		wantN(t, "PurgeOwners(short)", n, 3)
		wantStrings(t, "Owners after PurgeOwners", w.others(time.Hour), []string{"owner-c", "owner-f"})
		for _, gone := range []taskapi.Repository[Tx]{ob, od, oe} {
			if err := gone.Heartbeat(w.ctx, w.db); !errors.Is(err, taskapi.ErrUnknownOwner) {
				t.Errorf("Heartbeat(%s) after its purge = %v, want ErrUnknownOwner", gone.Owner(), err)
			}
		}
		// This owner is silent too, but never purges itself.
		w.must(w.repo.Heartbeat(w.ctx, w.db), "Heartbeat(%s) after PurgeOwners", Owner)
		// The tasks keep their owner names.
		if info := w.want(ta, pushed[0].Sequence, taskapi.Succeeded, taskapi.Ready); info.Owner != "owner-d" {
			t.Errorf("completed task of a purged owner has owner %q, want owner-d", info.Owner)
		}
		if info := w.want(ta, x.Sequence, taskapi.Active, taskapi.Ready); info.Owner != "owner-c" {
			t.Errorf("active task has owner %q, want owner-c", info.Owner)
		}
		w.must(of.Heartbeat(w.ctx, w.db), "Heartbeat(owner-f)") // fresh still, however long the checks above took
		n, err = w.repo.PurgeOwners(w.ctx, w.db, short)
		w.must(err, "PurgeOwners again")
		wantN(t, "PurgeOwners again", n, 0)
	}

	all["InitializeNewThenExisting"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		w.wantTopics()
		for i, want := range []bool{true, false} {
			created, err := w.repo.Initialize(w.ctx, w.db, ta)
			w.must(err, "Initialize #%d", i+1)
			if created != want {
				t.Errorf("Initialize #%d = %v, want %v", i+1, created, want)
			}
		}
		w.wantTopics(ta)
		task := w.pushIDs(ta, "a")[0]
		// Initializing again keeps the tasks.
		if created, err := w.repo.Initialize(w.ctx, w.db, ta); err != nil || created {
			t.Errorf("Initialize again = %v, %v; want false", created, err)
		}
		w.wantState(ta, task.Sequence, taskapi.Ready)
	}

	all["TopicsInByteOrder"] = func(t *testing.T) {
		names := []string{"b", "a_", "B", "ä", "a b", "Z", "a", "a-"}
		w := worldOf(setup(t, b, names...))
		want := slices.Sorted(slices.Values(names)) // Go compares strings bytewise
		w.wantTopics(want...)
		if !slices.Equal(want, []string{"B", "Z", "a", "a b", "a-", "a_", "b", "ä"}) {
			t.Fatalf("test bug: %q", want)
		}
	}

	all["NegativeDurations"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		ob := w.owner("owner-b")
		task := w.pushIDs(ta, "a")[0]
		w.pollExactly(ob, ta, task)
		before := w.snapshot(ta)

		owners, err := w.repo.Owners(w.ctx, w.db, -time.Nanosecond)
		if !errors.Is(err, taskapi.ErrInvalidArgument) || len(owners) != 0 {
			t.Errorf("Owners(-1ns) = %q, %v; want ErrInvalidArgument", owners, err)
		}
		n, err := w.repo.Expire(w.ctx, w.db, -time.Second)
		if !errors.Is(err, taskapi.ErrInvalidArgument) || n != 0 {
			t.Errorf("Expire(-1s) = %d, %v; want ErrInvalidArgument", n, err)
		}
		n, err = w.repo.PurgeOwners(w.ctx, w.db, -time.Millisecond)
		if !errors.Is(err, taskapi.ErrInvalidArgument) || n != 0 {
			t.Errorf("PurgeOwners(-1ms) = %d, %v; want ErrInvalidArgument", n, err)
		}
		w.unchanged(before)
		wantStrings(t, "Owners", w.others(time.Hour), []string{"owner-b"})
	}

	cases(t, all)
}
