package taskpg_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	var pid int32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatalf("read the session's pid: %v", err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatalf("terminate the session: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var alive bool
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
			t.Fatalf("look for the session: %v", err)
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d still runs a minute after its termination", pid)
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
