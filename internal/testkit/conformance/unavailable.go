package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testUnavailable checks that a call that cannot reach the database, or
// whose session the server ended, fails with taskapi.ErrUnavailable (the
// driver's error kept in the chain), and that the pool serves the calls
// that follow on other connections. In a session that ended, a driver may
// report the first failure without saying that the connection broke
// (go-sql-driver's "invalid connection" has neither a code nor a type of
// its own), so the call is made twice: it fails both times, the second
// time with ErrUnavailable at the latest (the driver then knows the
// connection is closed, driver.ErrBadConn).
func testUnavailable[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["CallsOnAnUnreachableServerAreUnavailable"] = func(t *testing.T) {
		if b.Unreachable == nil {
			t.Skip("the backend has no unreachable server (Backend.Unreachable)")
		}
		h := b.Unreachable(t)
		repo, err := b.New(Owner)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		for name, call := range unavailableCalls(repo) {
			if err := call(t.Context(), h); !errors.Is(err, taskapi.ErrUnavailable) {
				t.Errorf("%s on an unreachable server: error = %v, want %v", name, err, taskapi.ErrUnavailable)
			}
		}
	}

	all["CallsInAnEndedSessionAreUnavailable"] = func(t *testing.T) {
		if b.Kill == nil {
			t.Skip("the backend cannot end a session (Backend.Kill)")
		}
		w := worldOf(setup(t, b, "t"))
		ready := w.pushIDs("t", "ready")[0]
		for name, call := range unavailableCalls(w.repo) {
			tx, end, err := b.Begin(w.ctx, w.db)
			w.must(err, "Begin")
			w.pushOn(tx, "t", taskapi.Append, taskapi.Creation{Identifier: "lost"})
			b.Kill(t, w.db, tx)
			if err := call(w.ctx, tx); err == nil {
				t.Errorf("%s in a transaction whose session ended succeeded", name)
			}
			if err := call(w.ctx, tx); !errors.Is(err, taskapi.ErrUnavailable) {
				t.Errorf("%s again in a transaction whose session ended: error = %v, want %v", name, err, taskapi.ErrUnavailable)
			}
			_ = end(false) // fails: the session is gone
		}
		// The pool goes on with other connections; nothing of the ended
		// transactions remains.
		w.pushIDs("t", "afterwards")
		if infos := w.all("t"); len(infos) != 2 || infos[0].Sequence != ready.Sequence || infos[1].Identifier != "afterwards" {
			t.Errorf("topic t holds %v, want the task pushed before and the one after", infos)
		}
	}

	cases(t, all)
}

// unavailableCalls are calls of every kind, each on a handle given, that
// must report a database they cannot reach: writes and reads of tasks,
// owners and topics, and the database's clock and leadership where the
// repository offers them.
func unavailableCalls[Tx any](repo taskapi.Repository[Tx]) map[string]func(ctx context.Context, h Tx) error {
	calls := map[string]func(ctx context.Context, h Tx) error{
		"Register": func(ctx context.Context, h Tx) error { _, err := repo.Register(ctx, h); return err },
		"Push": func(ctx context.Context, h Tx) error {
			_, err := repo.Push(ctx, h, "t", taskapi.Append, taskapi.Creation{Identifier: "x"})
			return err
		},
		"Poll": func(ctx context.Context, h Tx) error { _, err := repo.Poll(ctx, h, "t", 10); return err },
		"Reassign": func(ctx context.Context, h Tx) error {
			return repo.Reassign(ctx, h, "t", taskapi.Assignment{Task: taskapi.Task{Sequence: 1}})
		},
		"Lookup": func(ctx context.Context, h Tx) error { _, _, err := repo.Lookup(ctx, h, "t", 1); return err },
		"Count": func(ctx context.Context, h Tx) error {
			_, err := repo.Count(ctx, h, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
			return err
		},
		"Topics": func(ctx context.Context, h Tx) error { _, err := repo.Topics(ctx, h); return err },
	}
	if clock, ok := repo.(taskapi.Clock[Tx]); ok {
		calls["Now"] = func(ctx context.Context, h Tx) error { _, err := clock.Now(ctx, h); return err }
	}
	if leader, ok := repo.(taskapi.Leader[Tx]); ok {
		calls["Lead"] = func(ctx context.Context, h Tx) error { _, _, err := leader.Lead(ctx, h, "t", time.Minute); return err }
		calls["Hold"] = func(ctx context.Context, h Tx) error {
			_, err := leader.Hold(ctx, h, taskapi.Term{Topic: "t", Owner: repo.Owner(), Number: 1})
			return err
		}
	}
	return calls
}
