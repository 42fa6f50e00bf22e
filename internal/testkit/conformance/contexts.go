package conformance

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// blockedDeadline is the deadline of a call made while Backend.Block holds
// the tables.
const blockedDeadline = 200 * time.Millisecond

// hungAfter is how long a blocked call may take to give up before the
// test calls it hung: far above any deadline or statement timeout of the
// cases, and never a measure of speed.
const hungAfter = 20 * time.Second

// testCancelledContexts checks that every call honours its context: given one
// already cancelled, it fails with context.Canceled, changes nothing and
// leaves the handle usable, on a pool and inside a caller's transaction;
// blocked by another session's locks (Backend.Block), it gives up once
// its deadline passes, with context.DeadlineExceeded, and has changed
// nothing once the locks are gone.
func testCancelledContexts[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	// No call reaches the database with a cancelled context: each
	// reports context.Canceled, the stored state is as before, and the
	// pool serves a push afterwards.
	all["ACancelledCallChangesNothing"] = func(t *testing.T) {
		s := stageSetup(t, b)
		ctx, cancel := context.WithCancel(s.ctx)
		cancel()
		before := s.capture()
		for _, c := range s.calls() {
			err := c.run(ctx, s.db)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: error = %v, want %v", c.name, err, context.Canceled)
			}
			s.wantSame(c.name+" with a cancelled context", before)
		}
		s.wantUsable(s.db)
		s.wantNeverLed()
	}

	// Inside a caller's transaction a call with a cancelled context fails
	// with context.Canceled and leaves the transaction usable: the work
	// before and after it commits, and nothing else. A call may refuse the
	// transaction instead, as it does whatever its context (MySQL's Refresh:
	// ANALYZE TABLE would commit it), with ErrInvalidArgument: the stage's
	// arguments are valid.
	all["ACancelledCallLeavesTheTransactionUsable"] = func(t *testing.T) {
		s := stageSetup(t, b)
		ctx, cancel := context.WithCancel(s.ctx)
		cancel()
		before := s.capture()
		tx, end := s.begin()
		mine := s.pushOn(tx, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "mine"})[0]
		for _, c := range s.calls() {
			if err := c.run(ctx, tx); !errors.Is(err, context.Canceled) && !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("%s with a cancelled context in a transaction: error = %v, want %v", c.name, err, context.Canceled)
			}
			if got := s.stateOn(tx, stageTopic, mine.Sequence); got != taskapi.Ready {
				t.Fatalf("after %s the transaction's own push is %v, want READY", c.name, got)
			}
		}
		later := s.wantUsable(tx)
		end(true)
		s.wantSame("the committed transaction", before, mine.Sequence, later.Sequence)
		s.wantNeverLed()
	}

	// A call that waits for another session's locks returns once its
	// deadline passes, with context.DeadlineExceeded, unless the locks do
	// not stop it (readers of a database that reads beside its writer);
	// once the locks are gone, what a failed call began has left no trace.
	all["ABlockedCallEndsAtItsDeadline"] = func(t *testing.T) {
		if b.Block == nil {
			t.Skip("the backend cannot block its tables (Backend.Block)")
		}
		s := stageSetup(t, b)
		s.blockedCalls(blockedDeadline, func(t *testing.T, name string, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s blocked past its deadline: error = %v, want %v", name, err, context.DeadlineExceeded)
			}
		})
	}

	cases(t, all)
}

// StatementTimeouts checks that every call blocked by b.Block, which must
// stop every statement (reads too), ends by a timeout of the database
// session, which the handles of b.Open carry (PostgreSQL's
// statement_timeout, MySQL's lock_wait_timeout): each call, made with a
// context without deadline, returns within a bound (it is not retried
// without end) with an error that want accepts (the driver's error stays in
// the chain), never with success, and has changed nothing once the tables
// are free. The calls wait together, under one block, so that a backend
// that retries a timeout a few times does not take minutes.
func StatementTimeouts[Tx any](t *testing.T, b Backend[Tx], want func(t *testing.T, call string, err error)) {
	if b.Block == nil {
		t.Fatal("StatementTimeouts needs Backend.Block")
	}
	s := stageSetup(t, b)
	s.blockedTogether(s.calls(), "the calls blocked until their statements timed out", want)
}

// blockedTogether makes calls at once, each with a context without
// deadline, while b.Block holds the tables, and checks that each returns
// within hungAfter with an error that want accepts, never with success;
// once the tables are free, nothing has changed (label names the calls)
// and the pool serves a push.
func (s *stage[Tx]) blockedTogether(calls []stageCall[Tx], label string, want func(t *testing.T, call string, err error)) {
	s.t.Helper()
	before := s.capture()
	release := s.b.Block(s.t, s.db)
	outcomes := s.together(calls)
	release()
	for _, name := range slices.Sorted(maps.Keys(outcomes)) {
		switch o := outcomes[name]; {
		case !o.returned:
			s.t.Errorf("%s blocked did not return within %v", name, hungAfter)
		case o.err == nil:
			s.t.Errorf("%s blocked returned no error: it did not wait, or lost the timeout", name)
		default:
			s.t.Logf("%s gave up after %v: %v", name, o.took.Round(time.Millisecond), o.err)
			want(s.t, name, o.err)
		}
	}
	s.wantSame(label, before)
	s.wantUsable(s.db)
	s.wantNeverLed()
}

// outcome is how a call ended: whether it returned within hungAfter, with
// what error, after how long.
type outcome struct {
	returned bool
	err      error
	took     time.Duration
}

// together makes calls at once, without deadline, and returns how each
// ended, by name.
func (s *stage[Tx]) together(calls []stageCall[Tx]) map[string]outcome {
	outcomes := map[string]outcome{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			start := time.Now()
			returned, err := s.within(c, 0)
			mu.Lock()
			defer mu.Unlock()
			outcomes[c.name] = outcome{returned: returned, err: err, took: time.Since(start)}
		})
	}
	wg.Wait()
	return outcomes
}

// blockedCalls makes every call while b.Block holds the tables, one after
// the other, each with a context of deadline d. A call must return within
// hungAfter; one that fails must fail as check wants and, once the tables
// are free again, have changed nothing, unless it said that its outcome
// is unknown (taskapi.ErrUnavailable: a server that did not stop the
// statement in time, such as a loaded pooler that held the cancel
// request), which no more than one call in four may; one that succeeds
// was not held up. Afterwards the pool serves a push.
func (s *stage[Tx]) blockedCalls(d time.Duration, check func(t *testing.T, name string, err error)) {
	s.t.Helper()
	calls, unknown := s.calls(), 0
	for _, c := range calls {
		before := s.capture()
		release := s.b.Block(s.t, s.db)
		returned, err := s.within(c, d)
		release()
		if !returned {
			s.t.Fatalf("%s blocked did not return within %v", c.name, hungAfter)
		}
		if err == nil {
			s.t.Logf("%s went through the block", c.name)
			continue
		}
		check(s.t, c.name, err)
		if errors.Is(err, taskapi.ErrUnavailable) {
			s.t.Logf("%s blocked left its outcome unknown: %v", c.name, err)
			unknown++
			continue
		}
		s.wantSame(c.name+" blocked", before)
	}
	if unknown > len(calls)/4 {
		s.t.Errorf("%d calls of %d blocked left their outcome unknown: the server did not stop their statements", unknown, len(calls))
	}
	s.wantUsable(s.db)
	s.wantNeverLed()
}

// within runs c on the pool with a context of deadline d (none when d is
// zero) and returns its error, or false when it has not returned within
// hungAfter.
func (s *stage[Tx]) within(c stageCall[Tx], d time.Duration) (returned bool, err error) {
	ctx := s.ctx
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(s.ctx, d)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() { done <- c.run(ctx, s.db) }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(hungAfter):
		return false, nil
	}
}

// wantUsable fails the test unless a push on h works; it returns the task.
func (s *stage[Tx]) wantUsable(h Tx) taskapi.Task {
	s.t.Helper()
	return s.pushOn(h, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "afterwards"})[0]
}
