package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/internal/bound"
	"github.com/taskrepo/taskrepo/taskapi"
)

// beginner is a handle that starts transactions: *sql.DB and *sql.Conn. A
// statement sent on one is a transaction of its own; any other DB (a
// *sql.Tx, a callerTx) is the caller's transaction.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// inside reports whether statements sent on db run in the caller's
// transaction.
func inside(db DB) bool {
	_, ok := db.(beginner)
	return !ok
}

// callerTx is a *sql.Conn inside a transaction that the caller began with
// SQL (BEGIN), which database/sql does not know of. It offers no BeginTx,
// so that a call works in a savepoint of its own, as in a *sql.Tx, and
// never begins (on MySQL: commits) a transaction of its own on it.
type callerTx struct{ conn *sql.Conn }

func (c callerTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.conn.ExecContext(ctx, query, args...)
}

func (c callerTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.conn.QueryContext(ctx, query, args...)
}

func (c callerTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return c.conn.QueryRowContext(ctx, query, args...)
}

// handle returns the handle that a call runs on: db itself, or a callerTx
// for a *sql.Conn inside a transaction that the caller began with SQL. A
// savepoint tells: PostgreSQL refuses one outside a transaction block, and
// on MySQL one set outside a transaction ends with its statement, so that
// releasing it fails. On SQLite a savepoint works either way (outside a
// transaction it begins one, which its release commits), so a connection
// is always taken as inside.
func (r *Repository) handle(ctx context.Context, db DB) (DB, error) {
	conn, ok := db.(*sql.Conn)
	if !ok {
		return db, nil
	}
	if r.dialect.name == "sqlite" {
		return callerTx{conn}, nil
	}
	_, err := conn.ExecContext(ctx, "SAVEPOINT taskrepo_probe")
	if err == nil {
		_, err = conn.ExecContext(ctx, "RELEASE SAVEPOINT taskrepo_probe")
	}
	var pgErr interface{ SQLState() string }
	switch {
	case err == nil:
		return callerTx{conn}, nil
	case errors.As(err, &pgErr) && pgErr.SQLState() == "25P01", // no_active_sql_transaction
		mysqlNumber(err) == mysqlNoSavepoint:
		return conn, nil
	}
	return nil, err
}

// savepoint names the savepoint of a call inside a caller's transaction.
const savepoint = "taskrepo_call"

// finishTimeout bounds the statements that end a call's savepoint (RELEASE,
// ROLLBACK TO): they run even once the call's context is done, so that a
// call never leaves half of its work in the caller's transaction, but no
// longer than this. A transaction of the call's own ends with its context:
// database/sql rolls it back once the context is done.
const finishTimeout = 10 * time.Second

// atomic runs fn inside a transaction of its own: a real one on a *sql.DB or
// a *sql.Conn, a savepoint inside a caller's *sql.Tx (database/sql has no
// nested transactions). It takes the dialect's write lock first. When fn
// fails, it rolls back, even once ctx is done, so that a caller's transaction
// stays usable; it never commits or rolls back the caller's transaction.
func (r *Repository) atomic(ctx context.Context, db DB, fn func(tx DB) error) error {
	return r.unit(ctx, db, fn, false)
}

// sealed runs fn, a write of a single statement, in a transaction of its
// own on a handle of the call's own, which it commits once fn has
// succeeded: the server then commits only on the call's word. Run alone,
// in autocommit, a statement that waits for a lock when the call gives up
// on it (its context ends, and the driver drops the connection) would still
// run, and commit, once the lock is free, though the call reported an
// error. Inside a caller's transaction fn runs as it is, a part of it.
func (r *Repository) sealed(ctx context.Context, db DB, fn func(db DB) error) error {
	if inside(db) {
		return fn(db)
	}
	return r.atomic(ctx, db, fn)
}

// sealedExec runs query, a write of a single statement, with args, sealed,
// and returns how many rows it changed.
func (r *Repository) sealedExec(ctx context.Context, db DB, query string, args ...any) (int64, error) {
	var n int64
	err := r.sealed(ctx, db, func(db DB) (err error) {
		n, err = affected(db.ExecContext(ctx, query, args...))
		return err
	})
	return n, err
}

// written runs sealedExec, again on conflicts (see retrying).
func (r *Repository) written(ctx context.Context, db DB, query string, args ...any) (int64, error) {
	var n int64
	err := r.retrying(ctx, db, func(db DB) (err error) {
		n, err = r.sealedExec(ctx, db, query, args...)
		return err
	})
	return n, err
}

// unit runs fn as atomic does, and rolls back also when fn succeeds if letGo
// is set: for reads whose locks must not pile up.
func (r *Repository) unit(ctx context.Context, db DB, fn func(tx DB) error, letGo bool) error {
	b, ok := db.(beginner)
	if !ok {
		return r.inSavepoint(ctx, db, fn, letGo)
	}
	if pool, ok := b.(*sql.DB); ok && r.dialect.name == "sqlite" {
		pass, err := takeTurn(ctx, pool) // turns.go
		if err != nil {
			return err
		}
		defer pass()
	}
	tx, err := b.BeginTx(ctx, &sql.TxOptions{Isolation: r.dialect.isolation})
	if err != nil {
		return err
	}
	if err = r.lockWrites(ctx, tx); err == nil {
		err = fn(tx)
	}
	if err == nil && !letGo {
		return tx.Commit()
	}
	if undoErr := tx.Rollback(); err == nil {
		err = undoErr
	}
	return err
}

func (r *Repository) inSavepoint(ctx context.Context, db DB, fn func(tx DB) error, letGo bool) error {
	if _, err := db.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
		return err
	}
	err := r.lockWrites(ctx, db)
	if err == nil {
		err = fn(db)
	}
	end, cancel := bound.Finishing(ctx, finishTimeout)
	defer cancel()
	if err != nil || letGo {
		if _, undoErr := db.ExecContext(end, "ROLLBACK TO SAVEPOINT "+savepoint); undoErr != nil {
			if err == nil {
				return undoErr
			}
			return fmt.Errorf("%w (and its rollback failed: %v)", err, undoErr)
		}
	}
	if _, releaseErr := db.ExecContext(end, "RELEASE SAVEPOINT "+savepoint); err == nil {
		err = releaseErr
	}
	return err
}

// lockWrites takes the dialect's write lock, where it has one.
func (r *Repository) lockWrites(ctx context.Context, db DB) error {
	if r.q.writeLock == "" {
		return nil
	}
	_, err := db.ExecContext(ctx, r.q.writeLock)
	return err
}

// Retries of calls that run in a transaction of their own and fail with
// ErrConflict: at most maxAttempts in all, waiting a random time below
// backoff, doubled each time.
const (
	maxAttempts  = 5
	firstBackoff = 5 * time.Millisecond
)

// retrying runs call on db resolved (see handle), again while it fails with
// ErrConflict and db gives the call a transaction of its own. Inside a
// caller's transaction the error says what became of it.
func (r *Repository) retrying(ctx context.Context, db DB, call func(db DB) error) error {
	db, err := r.handle(ctx, db)
	if err != nil {
		return err
	}
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		err := call(db)
		if !errors.Is(mapError(err), taskapi.ErrConflict) {
			return err
		}
		if inside(db) {
			return fmt.Errorf("%w; %s", err, r.dialect.afterConflict)
		}
		if attempt == maxAttempts {
			return fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(rand.N(backoff)):
		}
		backoff *= 2
	}
}

// expand fills the per-call tokens of query (pairs of token and text, see
// marks and rangeMarks) and numbers its placeholders for the dialect.
func (r *Repository) expand(query string, pairs ...string) string {
	if len(pairs) > 0 {
		query = strings.NewReplacer(pairs...).Replace(query)
	}
	return r.dialect.bind(query)
}

// marks returns n placeholders separated by commas.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// joinComma joins parts with commas.
func joinComma(parts []string) string {
	return strings.Join(parts, ", ")
}

// chunk is the most list items, ranges or rows that one statement takes, far
// below the parameter limits of the databases (SQLite's is 32766), and
// statementBytes the most bytes of text that one INSERT takes, unless one row
// has more: well within MySQL's smallest default max_allowed_packet (16 MiB
// on MariaDB).
const (
	chunk          = 1000
	statementBytes = 4 << 20
)

// appendArgs appends items to args.
func appendArgs[T any](args []any, items ...T) []any {
	for _, item := range items {
		args = append(args, item)
	}
	return args
}
