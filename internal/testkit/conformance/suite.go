// Package conformance is the behaviour suite that every taskapi.Repository
// implementation runs: the contract of docs/model.md, case by case, written once
// against the taskapi interfaces. An implementation's tests call Run with a
// Backend that opens fresh databases and builds repositories.
//
// The suite has one file per concern (push, poll, complete, release, revive,
// owners, read, purge, input, atomicity, clock, races, promises, fleet,
// capacity, limits, cancelling, termpoll, termhold, deferred, schedule,
// roster, find, hostile, cancel, unavailable, bound, audit; schedule holds
// NextDue too, which tells a runtime when to poll next).
// Every case runs in parallel on a database of its own.
package conformance

import (
	"context"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Backend is an implementation under test.
type Backend[Tx any] struct {
	// Open returns a handle on a fresh, empty, migrated database of the
	// test's own, safe for concurrent use (a pool). It closes and drops the
	// database through t.Cleanup, and skips or fails t when no database is
	// available.
	Open func(t *testing.T) Tx
	// New returns a repository for owner, which need not be registered.
	New func(owner string) (taskapi.Repository[Tx], error)
	// Begin starts a transaction on db and returns it with a function that
	// ends it: commit when true, roll back when false. A begin or commit
	// that the database refuses for a concurrent transaction fails with
	// taskapi.ErrConflict in the chain, as taskpg's and taskansi's Transact
	// report it.
	Begin func(ctx context.Context, db Tx) (Tx, func(commit bool) error, error)
	// SingleWriter says that the database runs one writing transaction at
	// a time, as SQLite does: a write waits for any open writing
	// transaction, so no push goes through while another transaction that
	// wrote stays open.
	SingleWriter bool
	// Exclusive says that the repositories wait for rows that others
	// locked instead of skipping them (WithExclusive): one consumer alone.
	Exclusive bool
	// SharedAdmission says that pushes into a topic with a capacity share
	// its admission (PostgreSQL's: tickets under a lock taken shared), so
	// that a push with room never waits for another producer's open
	// transaction; elsewhere they take turns on the topic's row.
	SharedAdmission bool
	// Bounds says that the server bounds one transaction, as PostgreSQL
	// does: Bound (taskapi.Bounder) and taskapi.Bounded take effect, where
	// elsewhere (MySQL, SQLite) they do nothing.
	Bounds bool
	// Block, when set, makes statements on the repository's tables wait:
	// another session of the database behind db takes locks that every
	// statement that writes, and on databases whose readers wait for
	// writers every statement, must wait for. The returned release lets
	// them go and returns once every statement that waited has ended,
	// also one whose caller gave up on it, so that what such a statement
	// did is seen by what follows. Cases that need it skip without it.
	Block func(t *testing.T, db Tx) (release func())
	// Kill, when set, ends the session of tx, a transaction that Begin
	// began on db, from another session of the database
	// (pg_terminate_backend, KILL), and returns once the server has ended
	// it. Unreachable, when set, returns a handle like Open's on a server
	// that does not answer: nothing listens where it connects. Cases that
	// need them skip without them.
	Kill        func(t *testing.T, db, tx Tx)
	Unreachable func(t *testing.T) Tx
}

// RunPushes runs the cases of pushing against b: Push, Capacity and
// Deferred. A backend that pushes another way than its repository's Push
// (the SQL functions of taskpg's schema) runs them, so that the two cannot
// drift apart.
func RunPushes[Tx any](t *testing.T, b Backend[Tx]) {
	t.Run("Push", func(t *testing.T) { testPush(t, b) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, b) })
	t.Run("Deferred", func(t *testing.T) { testDeferred(t, b) })
}

// Run runs the whole suite against b.
func Run[Tx any](t *testing.T, b Backend[Tx]) {
	t.Run("Push", func(t *testing.T) { testPush(t, b) })
	t.Run("Poll", func(t *testing.T) { testPoll(t, b) })
	t.Run("Complete", func(t *testing.T) { testComplete(t, b) })
	t.Run("Release", func(t *testing.T) { testRelease(t, b) })
	t.Run("Revive", func(t *testing.T) { testRevive(t, b) })
	t.Run("Reassign", func(t *testing.T) { testReassign(t, b) })
	t.Run("Join", func(t *testing.T) { testJoin(t, b) })
	t.Run("Owners", func(t *testing.T) { testOwners(t, b) })
	t.Run("Read", func(t *testing.T) { testRead(t, b) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, b) })
	t.Run("Input", func(t *testing.T) { testInput(t, b) })
	t.Run("Atomicity", func(t *testing.T) { testAtomicity(t, b) })
	t.Run("Clock", func(t *testing.T) { testClock(t, b) })
	t.Run("Races", func(t *testing.T) { testRaces(t, b) })
	t.Run("Promises", func(t *testing.T) { testPromises(t, b) })
	t.Run("Fleet", func(t *testing.T) { testFleet(t, b) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, b) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, b) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, b) })
	t.Run("TermPolls", func(t *testing.T) { testTermPolls(t, b) })
	t.Run("TermHolds", func(t *testing.T) { testTermHolds(t, b) })
	t.Run("Deferred", func(t *testing.T) { testDeferred(t, b) })
	t.Run("NextDue", func(t *testing.T) { testNextDue(t, b) })
	t.Run("Schedules", func(t *testing.T) { testSchedules(t, b) })
	t.Run("Roster", func(t *testing.T) { testRoster(t, b) })
	t.Run("Find", func(t *testing.T) { testFind(t, b) })
	t.Run("ReadyReads", func(t *testing.T) { testReadyReads(t, b) })
	t.Run("Hostile", func(t *testing.T) { testHostile(t, b) })
	t.Run("CancelledContexts", func(t *testing.T) { testCancelledContexts(t, b) })
	t.Run("Unavailable", func(t *testing.T) { testUnavailable(t, b) })
	t.Run("Bound", func(t *testing.T) { testBound(t, b) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, b) })
	t.Run("CompletionBounded", func(t *testing.T) { testCompletionBounded(t, b) })
}
