package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// boundFor is the bound that the cases give a transaction: far longer than
// the round trip between two statements of a call, also on a busy
// machine, and short enough that a case waits little for the server.
const boundFor = 300 * time.Millisecond

// testBound checks taskapi.Bounder, where the repository is one: a bound
// below a millisecond is ErrInvalidArgument, on the pool and in a
// transaction, which goes on; on the pool Bound does nothing. In a
// transaction on a server that bounds one (Backend.Bounds), the bound
// stops a call that waits longer than it, with ErrUnavailable and the
// server's 57014, and ends the transaction once it idles longer than it,
// so that its next call is ErrUnavailable and nothing of it is committed;
// Bound with a cancelled context fails there with context.Canceled, and
// in a session that ended with ErrUnavailable. Elsewhere Bound in a
// transaction does nothing, and the transaction goes on.
func testBound[Tx any](t *testing.T, b Backend[Tx]) {
	if repo, err := b.New(Owner); err != nil {
		t.Fatalf("New(%q): %v", Owner, err)
	} else if _, ok := repo.(taskapi.Bounder[Tx]); !ok {
		t.Skipf("%T is no taskapi.Bounder", repo)
	}
	all := boundCases(b)
	maps.Copy(all, serverBoundCases(b))
	cases(t, all)
}

// boundCases are the cases of testBound that every backend runs, but one
// that skips where the server bounds a transaction (Backend.Bounds).
func boundCases[Tx any](b Backend[Tx]) map[string]func(t *testing.T) {
	all := map[string]func(t *testing.T){}

	all["ABoundBelowAMillisecondIsInvalid"] = func(t *testing.T) {
		w := worldOf(setup(t, b, stageTopic))
		tx, end := w.begin()
		mine := w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "mine"})[0]
		for _, d := range []time.Duration{0, -time.Second, time.Millisecond - time.Nanosecond} {
			for name, h := range map[string]Tx{"the pool": w.db, "a transaction": tx} {
				if err := w.bounder().Bound(w.ctx, h, d); !errors.Is(err, taskapi.ErrInvalidArgument) {
					t.Errorf("Bound(%v) on %s: error = %v, want %v", d, name, err, taskapi.ErrInvalidArgument)
				}
			}
		}
		// Nothing bounds the transaction: it goes on, also after idling.
		w.wantGoesOn(tx, end, mine)
	}

	all["BoundOnThePoolBoundsNothing"] = func(t *testing.T) {
		w := worldOf(setup(t, b, stageTopic))
		w.must(w.bounder().Bound(w.ctx, w.db, boundFor), "Bound(%v) on the pool", boundFor)
		tx, end := w.begin()
		first := w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "first"})[0]
		w.wantGoesOn(tx, end, first)
	}

	all["ABoundWithACancelledContextChangesNothing"] = func(t *testing.T) {
		w := worldOf(setup(t, b, stageTopic))
		tx, end := w.begin()
		first := w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "first"})[0]
		ctx, cancel := context.WithCancel(w.ctx)
		cancel()
		switch err := w.bounder().Bound(ctx, tx, boundFor); {
		case b.Bounds && !errors.Is(err, context.Canceled):
			t.Errorf("Bound with a cancelled context: error = %v, want %v", err, context.Canceled)
		case !b.Bounds && err != nil && !errors.Is(err, context.Canceled):
			t.Errorf("Bound with a cancelled context, where it does nothing: error = %v, want none or %v", err, context.Canceled)
		}
		w.wantGoesOn(tx, end, first)
	}

	all["WithoutServerBoundsATransactionGoesOn"] = func(t *testing.T) {
		if b.Bounds {
			t.Skip("the server bounds one transaction (Backend.Bounds)")
		}
		w := worldOf(setup(t, b, stageTopic))
		tx, end := w.begin()
		first := w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "first"})[0]
		w.must(w.bounder().Bound(w.ctx, tx, boundFor), "Bound(%v) in a transaction", boundFor)
		w.wantGoesOn(tx, end, first)
	}

	return all
}

// serverBoundCases are the cases of testBound that need a server that
// bounds a transaction (Backend.Bounds), and skip elsewhere.
func serverBoundCases[Tx any](b Backend[Tx]) map[string]func(t *testing.T) {
	all := map[string]func(t *testing.T){}

	all["ABlockedCallInABoundTransactionEndsByItself"] = func(t *testing.T) {
		if !b.Bounds || b.Block == nil {
			t.Skip("the server does not bound one transaction (Backend.Bounds), or the backend cannot block its tables (Backend.Block)")
		}
		s := stageSetup(t, b)
		bounder := extension[taskapi.Bounder[Tx]](t, s.repo)
		calls := s.calls()
		for i, c := range calls {
			calls[i] = s.inBoundTransaction(bounder, c)
		}
		s.blockedTogether(calls, "the calls in bound transactions, blocked until the bound stopped them", wantStopped)
	}

	all["AnIdleBoundTransactionIsEnded"] = func(t *testing.T) {
		if !b.Bounds {
			t.Skip("the server does not bound one transaction (Backend.Bounds)")
		}
		w := worldOf(setup(t, b, stageTopic))
		newcomer, err := b.New("owner-new")
		w.must(err, "New(owner-new)")
		tx, end, err := b.Begin(w.ctx, w.db)
		w.must(err, "Begin")
		t.Cleanup(func() { _ = end(false) }) // fails once the session is gone
		w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "lost"})
		_, err = newcomer.Register(w.ctx, tx)
		w.must(err, "Register of owner-new in the transaction")
		w.must(w.bounder().Bound(w.ctx, tx, boundFor), "Bound(%v) in the transaction", boundFor)
		w.awaitEnd(newcomer)
		if err := w.repo.Heartbeat(w.ctx, tx); !errors.Is(err, taskapi.ErrUnavailable) {
			t.Errorf("Heartbeat in a bound transaction that idled past its bound: error = %v, want %v", err, taskapi.ErrUnavailable)
		}
		if err := end(true); err == nil {
			t.Error("the commit of a bound transaction that idled past its bound succeeded")
		}
		if infos := w.all(stageTopic); len(infos) != 0 {
			t.Errorf("topic %q holds %s, want nothing: the ended transaction's push was committed", stageTopic, describe(infos))
		}
	}

	all["BoundInAnEndedSessionIsUnavailable"] = func(t *testing.T) {
		if !b.Bounds || b.Kill == nil {
			t.Skip("the server does not bound one transaction (Backend.Bounds), or the backend cannot end a session (Backend.Kill)")
		}
		w := worldOf(setup(t, b, stageTopic))
		tx, end, err := b.Begin(w.ctx, w.db)
		w.must(err, "Begin")
		t.Cleanup(func() { _ = end(false) }) // fails once the session is gone
		b.Kill(t, w.db, tx)
		// As in testUnavailable, the first failure may not say that the
		// connection broke; the second does.
		if err := w.bounder().Bound(w.ctx, tx, boundFor); err == nil {
			t.Error("Bound in a transaction whose session ended succeeded")
		}
		if err := w.bounder().Bound(w.ctx, tx, boundFor); !errors.Is(err, taskapi.ErrUnavailable) {
			t.Errorf("Bound again in a transaction whose session ended: error = %v, want %v", err, taskapi.ErrUnavailable)
		}
		w.pushIDs(stageTopic, "afterwards")
	}

	return all
}

// bounder returns the case's repository as a taskapi.Bounder, which
// testBound made sure it is.
func (w *world[Tx]) bounder() taskapi.Bounder[Tx] {
	w.t.Helper()
	return extension[taskapi.Bounder[Tx]](w.t, w.repo)
}

// wantGoesOn idles twice boundFor in tx, a transaction of w.begin in which
// first was pushed, then pushes another task in it and commits it; it
// fails the test unless both tasks are committed, and nothing else: no
// bound ended tx.
func (w *world[Tx]) wantGoesOn(tx Tx, end func(commit bool), first taskapi.Task) {
	w.t.Helper()
	time.Sleep(2 * boundFor)
	later := w.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "later"})[0]
	end(true)
	wantSeqs(w.t, "the tasks of the transaction", infoSequences(w.all(stageTopic)), seqsOf(first, later))
}

// awaitEnd registers newcomer on the pool while a transaction, which
// registered it first and then idles, holds the row: the Register waits
// until the server has ended the transaction, within hungAfter, and
// registers newcomer anew, unless the transaction's Register was
// committed.
func (w *world[Tx]) awaitEnd(newcomer taskapi.Repository[Tx]) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, hungAfter)
	defer cancel()
	registered, err := newcomer.Register(ctx, w.db)
	w.must(err, "Register of owner-new on the pool while the transaction that registered it idles (it was never ended)")
	if !registered {
		w.t.Errorf("Register of owner-new on the pool = false, want true: the ended transaction's Register was committed")
	}
}

// inBoundTransaction returns c made in a transaction of its own, which
// Backend.Begin begins on the handle given and bounder bounds to boundFor
// at once, and which is rolled back afterwards.
func (s *stage[Tx]) inBoundTransaction(bounder taskapi.Bounder[Tx], c stageCall[Tx]) stageCall[Tx] {
	return stageCall[Tx]{c.name, func(ctx context.Context, db Tx) error {
		tx, end, err := s.b.Begin(ctx, db)
		if err != nil {
			return fmt.Errorf("begin a transaction: %w", err)
		}
		defer func() { _ = end(false) }() // the call's error is the one to report
		if err := bounder.Bound(ctx, tx, boundFor); err != nil {
			return fmt.Errorf("bound the transaction to %v: %w", boundFor, err)
		}
		return c.run(ctx, tx)
	}}
}

// wantStopped fails t unless err, the failure of a call whose statement a
// bound stopped, is taskapi.ErrUnavailable with the server's SQLSTATE
// 57014 (query_canceled) in its chain, and no conflict: a call that ran
// out of its bound is not run again.
func wantStopped(t *testing.T, call string, err error) {
	t.Helper()
	if state := sqlState(err); state != "57014" {
		t.Errorf("%s stopped by its bound: error = %v (SQLSTATE %q), want SQLSTATE 57014 in the chain", call, err, state)
	}
	if !errors.Is(err, taskapi.ErrUnavailable) || errors.Is(err, taskapi.ErrConflict) {
		t.Errorf("%s stopped by its bound: error = %v, want %v and no %v", call, err, taskapi.ErrUnavailable, taskapi.ErrConflict)
	}
}

// sqlState returns the SQLSTATE of the server's error in err's chain, an
// error of a PostgreSQL driver with a SQLState method (pgx's, lib/pq's),
// or "" when it holds none.
func sqlState(err error) string {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// wantBoundReads fails the test unless Bound, where the repository is a
// taskapi.Bounder, succeeds in a transaction on h, a handle on a database
// whose sessions may only read, and a read succeeds after it there: a
// bound writes nothing.
func (s *stage[Tx]) wantBoundReads(h Tx) {
	s.t.Helper()
	bounder, ok := s.repo.(taskapi.Bounder[Tx])
	if !ok {
		return
	}
	tx, end, err := s.b.Begin(s.ctx, h)
	s.must(err, "Begin on a read-only database")
	defer func() { _ = end(false) }()
	if err := bounder.Bound(s.ctx, tx, time.Minute); err != nil {
		s.t.Errorf("Bound in a transaction on a read-only database: %v", err)
	}
	if _, err := s.repo.Topics(s.ctx, tx); err != nil {
		s.t.Errorf("Topics after a Bound in a transaction on a read-only database: %v", err)
	}
}
