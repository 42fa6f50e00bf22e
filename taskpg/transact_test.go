package taskpg_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// errMine is the error of a transaction's function of the caller's own.
var errMine = errors.New("the function's own failure")

// sentinels are the errors of taskapi that a transaction function may add.
var sentinels = []error{
	taskapi.ErrUnknownTopic, taskapi.ErrUnknownOwner, taskapi.ErrNotActive, taskapi.ErrStateMismatch,
	taskapi.ErrInvalidArgument, taskapi.ErrConflict, taskapi.ErrUnavailable,
}

// wantOnly fails t unless err holds the sentinels of taskapi in want and no
// other.
func wantOnly(t *testing.T, what string, err error, want ...error) {
	t.Helper()
	for _, s := range sentinels {
		if held, wanted := errors.Is(err, s), errors.Is(errors.Join(want...), s); held != wanted {
			t.Errorf("%s: error %v holds %v: %v, want %v", what, err, s, held, wanted)
		}
	}
}

// terminate ends the session of tx from another connection of pool, and
// returns once the server has ended it.
func terminate(t *testing.T, pool *pgxpool.Pool, tx taskpg.DB) {
	t.Helper()
	ctx := t.Context()
	pid, err := sessionOf(ctx, tx)
	if err == nil {
		_, err = pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	}
	if err == nil {
		err = awaitSessionEnd(ctx, pool, pid)
	}
	if err != nil {
		t.Fatalf("terminate the session: %v", err)
	}
}

// sessionOf returns the process id of the session of tx.
func sessionOf(ctx context.Context, tx taskpg.DB) (int32, error) {
	var pid int32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return 0, fmt.Errorf("read the session's pid: %w", err)
	}
	return pid, nil
}

// awaitSessionEnd returns once the session pid has ended, as pool sees
// from another connection, or an error when it cannot tell or the session
// still runs a minute later. It fails no test itself, for the transaction
// functions of the tests: one whose goroutine exits (t.FailNow) leaves its
// transaction open and the pool, which waits for its connection, unable
// to close.
func awaitSessionEnd(ctx context.Context, pool *pgxpool.Pool, pid int32) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var alive bool
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
			return fmt.Errorf("look for session %d: %w", pid, err)
		}
		if !alive {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %d still runs a minute after it was ended", pid)
		}
	}
}

func TestTransactReportsABrokenConnectionAsUnavailable(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	transact := taskpg.Transact(pool)
	ctx := t.Context()

	// fn's own statement meets the terminated session.
	err := transact(ctx, func(tx taskpg.DB) error {
		terminate(t, pool, tx)
		_, err := tx.Exec(ctx, "SELECT 1")
		return fmt.Errorf("%w: %w", errMine, err)
	})
	if !errors.Is(err, errMine) {
		t.Errorf("a statement on a terminated session: error %v, want the function's error in the chain", err)
	}
	wantOnly(t, "a statement on a terminated session", err, taskapi.ErrUnavailable)

	// fn fails for reasons of its own, and the rollback finds the session
	// gone.
	err = transact(ctx, func(tx taskpg.DB) error {
		terminate(t, pool, tx)
		return errMine
	})
	if !errors.Is(err, errMine) {
		t.Errorf("a rollback on a terminated session: error %v, want the function's error in the chain", err)
	}
	wantOnly(t, "a rollback on a terminated session", err, taskapi.ErrUnavailable)

	// fn succeeds, and the commit finds the session gone: it may have
	// committed, as far as the caller can tell.
	err = transact(ctx, func(tx taskpg.DB) error {
		terminate(t, pool, tx)
		return nil
	})
	wantOnly(t, "a commit on a terminated session", err, taskapi.ErrUnavailable)

	// The pool carries on with other connections.
	if err := transact(ctx, func(tx taskpg.DB) error { _, err := tx.Exec(ctx, "SELECT 1"); return err }); err != nil {
		t.Errorf("a transaction after the terminated ones: %v", err)
	}
}

func TestTransactKeepsTheCallersErrors(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	transact := taskpg.Transact(pool)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, "CREATE TABLE public.mine (id integer PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	err := transact(ctx, func(taskpg.DB) error { return fmt.Errorf("handler: %w", taskapi.ErrNotActive) })
	wantOnly(t, "a plain error with a sentinel of the caller's", err, taskapi.ErrNotActive)
	err = transact(ctx, func(taskpg.DB) error { return errMine })
	if err != errMine {
		t.Errorf("a plain error: %v, want it as it was", err)
	}

	// A unique violation on the caller's own table stays the caller's.
	err = transact(ctx, func(tx taskpg.DB) error {
		_, err := tx.Exec(ctx, "INSERT INTO public.mine (id) VALUES (1), (1)")
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("a unique violation: error %v, want SQLSTATE 23505 in the chain", err)
	}
	wantOnly(t, "a unique violation", err)

	// A lock of the caller's own statement that is not available is a
	// conflict: run the transaction again.
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, "INSERT INTO public.mine (id) VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	err = transact(ctx, func(tx taskpg.DB) error {
		_, err := tx.Exec(ctx, "LOCK TABLE public.mine IN EXCLUSIVE MODE NOWAIT")
		return err
	})
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Errorf("a lock not available: error %v, want SQLSTATE 55P03 in the chain", err)
	}
	wantOnly(t, "a lock not available", err, taskapi.ErrConflict)
}

func TestTransactCommitsAndRollsBack(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	transact := taskpg.Transact(pool)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, "CREATE TABLE public.mine (id integer PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	insert := func(id int, then error) func(tx taskpg.DB) error {
		return func(tx taskpg.DB) error {
			if _, err := tx.Exec(ctx, "INSERT INTO public.mine (id) VALUES ($1)", id); err != nil {
				return err
			}
			return then
		}
	}
	if err := transact(ctx, insert(1, nil)); err != nil {
		t.Fatalf("a transaction that succeeds: %v", err)
	}
	if err := transact(ctx, insert(2, errMine)); err != errMine {
		t.Errorf("a transaction that fails: %v, want %v", err, errMine)
	}
	func() {
		defer func() {
			if p := recover(); p != errMine {
				t.Errorf("a transaction that panics: recovered %v, want %v", p, errMine)
			}
		}()
		_ = transact(ctx, func(tx taskpg.DB) error { _ = insert(3, nil)(tx); panic(errMine) })
	}()
	var ids []int32
	rows, _ := pool.Query(ctx, "SELECT id FROM public.mine ORDER BY id")
	for rows.Next() {
		var id int32
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) != 1 || ids[0] != 1 {
		t.Errorf("rows committed: %v, %v; want only the first", ids, err)
	}

	// A BEGIN that cannot reach the server.
	unreachable, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer unreachable.Close()
	err = taskpg.Transact(unreachable)(ctx, func(taskpg.DB) error { t.Error("fn ran without a transaction"); return nil })
	wantOnly(t, "a BEGIN on an unreachable server", err, taskapi.ErrUnavailable)
}

// Under taskapi.SingleStatement, Transact on a pool or a connection runs
// the function on that handle, without BEGIN and COMMIT; without the mark,
// or on a transaction, the function gets a transaction (a savepoint) as
// ever.
func TestTransactOfASingleStatement(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	inTransaction := func(db taskpg.DB, ctx context.Context) bool {
		t.Helper()
		var in bool
		err := taskpg.Transact(db)(ctx, func(db taskpg.DB) error {
			// SAVEPOINT works only in a transaction block: outside one the
			// server refuses it (no_active_sql_transaction).
			_, err := db.Exec(ctx, "SAVEPOINT probe")
			in = err == nil
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	single := taskapi.SingleStatement(t.Context())
	for name, c := range map[string]struct {
		db   taskpg.DB
		ctx  context.Context
		want bool
	}{
		"pool, single statement":        {pool, single, false},
		"connection, single statement":  {conn.Conn(), single, false},
		"pool":                          {pool, t.Context(), true},
		"transaction, single statement": {tx, single, true},
	} {
		if got := inTransaction(c.db, c.ctx); got != c.want {
			t.Errorf("%s: in a transaction begun before = %v, want %v", name, got, c.want)
		}
	}
}

// transactBound is the bound of the transactions of the tests of
// taskapi.Bounded: far longer than a round trip, also on a busy machine,
// and short enough to wait for.
const transactBound = 300 * time.Millisecond

// wantCode fails t unless err holds a PostgreSQL error with SQLSTATE code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Errorf("%s: error %v, want SQLSTATE %s in the chain", what, err, code)
	}
}

// TestTransactAnswersPoolSize checks the answers of taskpg.Transact to
// taskapi.PoolSize: on a pool its MaxConns, for which the pool lends no
// connection; on a connection one; on a transaction 0. A transaction
// function of the caller's own, which does not know the question, gives 0:
// it runs the work of the question, which returns without a statement.
func TestTransactAnswersPoolSize(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Pool(t, testdb.PostgresURL(t), 3)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	lent := pool.Stat().AcquireCount()
	if got := taskapi.PoolSize(ctx, taskpg.Transact(pool)); got != 3 {
		t.Errorf("PoolSize of a pool of 3 = %d, want 3", got)
	}
	if n := pool.Stat().AcquireCount() - lent; n != 0 {
		t.Errorf("the pool lent %d connections to answer PoolSize, want none", n)
	}
	for name, c := range map[string]struct {
		db   taskpg.DB
		want int
	}{
		"a connection":             {conn.Conn(), 1},
		"a connection of the pool": {conn, 1},
		"a transaction":            {tx, 0},
	} {
		if got := taskapi.PoolSize(ctx, taskpg.Transact(c.db)); got != c.want {
			t.Errorf("PoolSize of %s = %d, want %d", name, got, c.want)
		}
	}
	// The caller's own function runs the work on a transaction that has
	// ended, where a statement fails with pgx.ErrTxClosed.
	ended, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	ran, workErr := false, error(nil)
	own := func(ctx context.Context, fn func(tx taskpg.DB) error) error {
		ran, workErr = true, fn(ended)
		return workErr
	}
	if got := taskapi.PoolSize(ctx, own); got != 0 || !ran || errors.Is(workErr, pgx.ErrTxClosed) {
		t.Errorf("PoolSize of a function of the caller's own = %d (work run %v, its error %v); want 0, the work run without a statement", got, ran, workErr)
	}
}

// TestTransactBoundsTheTransactionOnTheServer checks that the transaction
// that taskpg.Transact begins on a context marked taskapi.Bounded is
// bounded on the server. A statement of the function's own that runs
// longer than the bound is stopped (SQLSTATE 57014), which Transact leaves
// the caller's failure, with no sentinel, as its documentation says. A
// function that idles longer than the bound finds its session ended by
// the server (25P03), taskapi.ErrUnavailable. On an unmarked context the
// same statement and the same idling pass.
func TestTransactBoundsTheTransactionOnTheServer(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	transact := taskpg.Transact(pool)
	ctx := t.Context()
	bounded := taskapi.Bounded(ctx, transactBound)
	long := fmt.Sprintf("SELECT pg_sleep(%v)", (2 * transactBound).Seconds())

	err := transact(bounded, func(tx taskpg.DB) error { _, err := tx.Exec(ctx, long); return err })
	wantCode(t, "a statement longer than the bound", err, "57014")
	wantOnly(t, "a statement longer than the bound", err)

	err = transact(bounded, func(tx taskpg.DB) error {
		// The server ends the session: nothing else does.
		pid, err := sessionOf(ctx, tx)
		if err == nil {
			err = awaitSessionEnd(ctx, pool, pid)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT 1")
		return err
	})
	wantCode(t, "a statement after idling longer than the bound", err, "25P03")
	wantOnly(t, "a statement after idling longer than the bound", err, taskapi.ErrUnavailable)

	err = transact(ctx, func(tx taskpg.DB) error {
		if _, err := tx.Exec(ctx, long); err != nil {
			return err
		}
		time.Sleep(2 * transactBound)
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	if err != nil {
		t.Errorf("a long statement and idling without a bound: %v", err)
	}
}

// TestTransactSaysThePoolIsExhausted holds both connections of a pool of
// two and checks that taskpg.Transact, whose context ends while it waits
// for a connection, to begin or to run a single statement, says that the
// pool was exhausted, with its size, and keeps the context's error; a
// context that ended while a connection was free says nothing of the kind.
func TestTransactSaysThePoolIsExhausted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Pool(t, testdb.PostgresURL(t), 2)
	var held []*pgxpool.Conn
	defer func() {
		for _, conn := range held {
			conn.Release()
		}
	}()
	for range 2 {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	const want = "pool exhausted: all 2 connections of the pool were in use"
	for name, mark := range map[string]func(context.Context) context.Context{
		"a begin":            func(ctx context.Context) context.Context { return ctx },
		"a single statement": taskapi.SingleStatement,
	} {
		wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := taskpg.Transact(pool)(mark(wait), func(db taskpg.DB) error { _, err := db.Exec(wait, "SELECT 1"); return err })
		cancel()
		if !strings.Contains(fmt.Sprint(err), want) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on an exhausted pool: error %v, want %q and %v", name, err, want, context.DeadlineExceeded)
		}
	}
	held[0].Release()
	held = held[1:]
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := taskpg.Transact(pool)(cancelled, func(taskpg.DB) error { return nil })
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "pool exhausted") {
		t.Errorf("a begin with a cancelled context and a free connection: error %v, want %v and no word of an exhausted pool", err, context.Canceled)
	}
}

// TestTransactRollsBackAFunctionThatEndsItsGoroutine runs a transaction
// whose function ends its goroutine (runtime.Goexit, as a test's FailNow
// does) after a write: the transaction is rolled back and its connection
// given back to the pool, so that the write is gone and the pool closes.
func TestTransactRollsBackAFunctionThatEndsItsGoroutine(t *testing.T) {
	ctx := t.Context()
	pool := testdb.Pool(t, testdb.PostgresURL(t), 2)
	if _, err := pool.Exec(ctx, "CREATE TABLE public.mine (id int)"); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = taskpg.Transact(pool)(ctx, func(tx taskpg.DB) error {
			if _, err := tx.Exec(ctx, "INSERT INTO public.mine VALUES (1)"); err != nil {
				return err
			}
			runtime.Goexit()
			return nil
		})
	}()
	<-ended
	deadline := time.Now().Add(time.Minute)
	for pool.Stat().AcquiredConns() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the connection of the transaction was never given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM public.mine").Scan(&n); err != nil || n != 0 {
		t.Errorf("the function's write: %d rows (%v), want none", n, err)
	}
}
