package taskpg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/bound"
	"github.com/taskrepo/taskrepo/taskapi"
)

// scope says what a statement sent on a DB runs in.
type scope int

const (
	// own: a transaction of its own (a pool, or a connection outside a
	// transaction); a call may begin a transaction and retry.
	own scope = iota
	// inside: the caller's transaction (a pgx.Tx, or a connection inside a
	// transaction begun with a plain BEGIN); a call works in a savepoint of
	// its own and never commits, rolls back or retries.
	inside
	// foreign: another implementation of DB, whose Begin is trusted to
	// begin a transaction or a savepoint, as pgx's do.
	foreign
)

// scopeOf tells what the statements sent on db run in. A connection is
// asked for its transaction status, so that a caller's BEGIN sent as SQL
// is seen too.
func scopeOf(db DB) scope {
	switch db := db.(type) {
	case *pgxpool.Pool:
		return own
	case pgx.Tx:
		return inside
	case *pgx.Conn:
		return statusScope(db)
	case interface{ Conn() *pgx.Conn }: // *pgxpool.Conn
		return statusScope(db.Conn())
	}
	return foreign
}

func statusScope(conn *pgx.Conn) scope {
	if conn.PgConn().TxStatus() == 'I' {
		return own
	}
	return inside
}

// finishTimeout bounds the statements that end a call's own transaction or
// savepoint (COMMIT, RELEASE, ROLLBACK): they run even once the call's
// context is done, so that a call never leaves half of its work behind, but
// no longer than this.
const finishTimeout = 10 * time.Second

// finishing returns the context of the statements that end a call's own
// transaction or savepoint.
func finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return bound.Finishing(ctx, finishTimeout)
}

// dropSilent closes the socket of conn once pgx has given up on it (a context
// that ended mid-call, a connection that broke): pgx then drains the
// connection in the background, for up to 15 seconds, before it closes it,
// and a pgxpool counts the connection among its MaxConns until it has. A
// connection that went silent (packets dropped, socket open) would hold a
// slot of the pool that long; closed, it holds none. A connection that
// pgx still trusts is left as it is. Only the connection's user may call
// it: a pool may hand the connection to another once it is released.
func dropSilent(conn *pgx.Conn) {
	if conn != nil && conn.IsClosed() {
		_ = conn.PgConn().Conn().Close()
	}
}

// ending runs end, which ends tx (a COMMIT or a ROLLBACK that also gives
// tx's connection back to its pool), and closes the connection's socket
// when end failed for the connection rather than for the server: pgx has
// given up on the connection then (see dropSilent), and the pool, which
// owns it by now, destroys it. Its socket is the one thing of it that may
// be touched from here.
func ending(tx pgx.Tx, end func() error) error {
	socket := tx.Conn().PgConn().Conn()
	err := end()
	var pgErr *pgconn.PgError
	if err != nil && !errors.Is(err, pgx.ErrTxClosed) && !errors.As(err, &pgErr) {
		_ = socket.Close()
	}
	return err
}

// savepointName names the savepoint of a call inside a caller's transaction.
const savepointName = "taskrepo_call"

// atomic runs fn as a unit: in a transaction of its own where db is a pool
// or a connection outside a transaction, in a savepoint inside a caller's
// transaction. It commits (releases) when fn succeeds and rolls back when it
// fails, also once ctx is done; it never commits or rolls back a
// transaction that it did not begin.
func atomic(ctx context.Context, db DB, fn func(db DB) error) error {
	return unit(ctx, db, fn, false)
}

// sealed runs fn, a write, in a transaction of its own where db is a pool
// or a connection outside a transaction, as atomic does: the server then
// commits only on the call's word (an implicit transaction would commit a
// statement that waited for a lock after the call gave up on it, see
// guard). Inside a caller's transaction fn runs as it is, a part of it.
// Statements that write go through sealed, a pipeline, exec or
// storedSequences.
func sealed(ctx context.Context, db DB, fn func(db DB) error) error {
	if scopeOf(db) != own {
		return fn(db)
	}
	return atomic(ctx, db, fn)
}

// unit runs fn as atomic does, and rolls back also when fn succeeds if
// letGo is set: for reads whose locks must not pile up.
func unit(ctx context.Context, db DB, fn func(db DB) error, letGo bool) error {
	if scopeOf(db) == inside {
		return inSavepoint(ctx, db, fn, letGo)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	err = fn(tx)
	end, cancel := finishing(ctx)
	defer cancel()
	if err != nil {
		// err is the one to report; a failed rollback closes the connection
		_ = ending(tx, func() error { return tx.Rollback(end) })
		return err
	}
	if letGo {
		return ending(tx, func() error { return tx.Rollback(end) })
	}
	return ending(tx, func() error { return tx.Commit(end) })
}

// inSavepoint runs fn in a savepoint of its own inside the caller's
// transaction on db, released when fn succeeds and rolled back to when it
// fails or letGo is set. pgx's nested transactions are not used: they do
// not roll back once their release has failed, for instance because the
// context was cancelled.
func inSavepoint(ctx context.Context, db DB, fn func(db DB) error, letGo bool) error {
	if err := control(ctx, db, "SAVEPOINT "+savepointName); err != nil {
		return err
	}
	err := fn(db)
	end, cancel := finishing(ctx)
	defer cancel()
	if err != nil || letGo {
		if undoErr := control(end, db, "ROLLBACK TO SAVEPOINT "+savepointName); undoErr != nil {
			if err == nil {
				return undoErr
			}
			return fmt.Errorf("%w (and its rollback failed: %v)", err, undoErr)
		}
	}
	if releaseErr := control(end, db, "RELEASE SAVEPOINT "+savepointName); err == nil {
		err = releaseErr
	}
	return err
}

// control sends a statement without arguments, such as SAVEPOINT, in the
// simple protocol: one round trip, nothing prepared.
func control(ctx context.Context, db DB, statement string) error {
	_, err := db.Exec(ctx, statement, pgx.QueryExecModeSimpleProtocol)
	return err
}

// Retries of calls that run in a transaction of their own and fail with
// ErrConflict: at most maxAttempts in all, waiting a random time below
// backoff, doubled each time.
const (
	maxAttempts  = 5
	firstBackoff = 5 * time.Millisecond
)

// retrying runs call, again while it fails with ErrConflict and db gives the
// call a transaction of its own. Inside a caller's transaction a conflict
// aborts the whole transaction, and the error says so.
func retrying[T any](ctx context.Context, db DB, call func() (T, error)) (T, error) {
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		v, err := call()
		if !errors.Is(err, taskapi.ErrConflict) {
			return v, err
		}
		switch scopeOf(db) {
		case inside:
			return v, fmt.Errorf("%w; the transaction is aborted: roll it back and run it again", err)
		case foreign:
			return v, err
		}
		if attempt == maxAttempts {
			return v, fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(rand.N(backoff)):
		}
		backoff *= 2
	}
}
