package taskpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/bound"
	"github.com/taskrepo/taskrepo/internal/fault"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Transact returns a function that runs fn in a transaction begun on db (a
// pool; on a transaction, a savepoint): it commits when fn returns nil and
// rolls back otherwise, also when fn panics. Its type is that of
// taskproc.Transact[taskpg.DB], the transaction function of the consumer
// runtime:
//
//	client, err := taskproc.New(repo, taskpg.Transact(pool))
//
// When fn fails, the error keeps fn's error in its chain, so that
// errors.Is finds fn's own sentinels, and adds taskapi.ErrConflict or
// taskapi.ErrUnavailable when fn's error is a failure of the server of that
// class (a statement of the caller's own that met a serialization failure,
// a terminated session, one the server ended for idling, a write that a
// standby refused), and taskapi.ErrUnavailable when the rollback failed:
// the connection broke. Other failures of the server (a unique violation
// on the caller's own table, or a statement of the caller's own that the
// server's statement_timeout stopped, 57014) stay the caller's, with no
// sentinel. A BEGIN or COMMIT that fails is reported the same way; a
// COMMIT that is ErrUnavailable may have committed. When ctx carries
// taskapi.SingleStatement and db is a pool or a connection outside a
// transaction, fn runs on db itself, its one round trip committing by
// itself. When ctx is taskapi.Bounded, the transaction is bounded on the
// server from its BEGIN, in the same round trip. A pool answers
// taskapi.PoolSize with its MaxConns, and a wait for one of its
// connections that ctx ended while every one was in use says that the
// pool was exhausted.
func Transact(db DB) func(ctx context.Context, fn func(tx DB) error) error {
	return func(ctx context.Context, fn func(tx DB) error) error {
		if taskapi.AnswerPoolSize(ctx, poolSize(db)) {
			return nil
		}
		full := poolFull(db)
		if taskapi.IsSingleStatement(ctx) && scopeOf(db) == own {
			// fn's one round trip commits by itself on a pool or a
			// connection outside a transaction: no BEGIN and COMMIT.
			if err := fn(db); err != nil {
				return exhausted(ctx, db, full, err)
			}
			return nil
		}
		tx, err := beginTx(ctx, db)
		if err != nil {
			err = exhausted(ctx, db, full, err)
			return fmt.Errorf("taskpg: begin a transaction: %w", fault.Transient(err, classify(err)))
		}
		return settle(ctx, tx, fn)
	}
}

// beginner is a handle that begins transactions with options: a pool and
// the connections, not a transaction.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// beginTx begins a transaction on db, bounded on the server from its start
// when ctx is taskapi.Bounded and db begins a transaction rather than a
// savepoint.
func beginTx(ctx context.Context, db DB) (tx pgx.Tx, err error) {
	b, ok := db.(beginner)
	if d, bounded := taskapi.BoundOf(ctx); ok && bounded && scopeOf(db) == own {
		tx, err = b.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; " + bound.Postgres(d)})
	} else {
		tx, err = db.Begin(ctx)
	}
	if err != nil {
		return nil, err
	}
	return tx, nil
}

// poolSize is the most connections that transactions on db draw from: a
// pool's MaxConns, one for a connection, 0 when unknown (a transaction).
func poolSize(db DB) int {
	switch db := db.(type) {
	case *pgxpool.Pool:
		return int(db.Config().MaxConns)
	case *pgx.Conn, *pgxpool.Conn:
		return 1
	}
	return 0
}

// exhausted adds to err, the failure of a begin (or of a single
// statement's round trip) on db whose context ended, that every
// connection of db, a pool, was in use when it began (full) or when it
// gave up: the wait was for a connection, and the pool is too small for
// what holds it.
func exhausted(ctx context.Context, db DB, full bool, err error) error {
	pool, ok := db.(*pgxpool.Pool)
	if !ok || ctx.Err() == nil || (!full && !poolFull(db)) {
		return err
	}
	return fmt.Errorf("pool exhausted: all %d connections of the pool were in use: %w", pool.Stat().MaxConns(), err)
}

// poolFull reports whether db is a pool every connection of which is in
// use.
func poolFull(db DB) bool {
	pool, ok := db.(*pgxpool.Pool)
	if !ok {
		return false
	}
	stat := pool.Stat()
	return stat.AcquiredConns() >= stat.MaxConns()
}

// settle runs fn in tx and ends tx: a commit when fn succeeds, a rollback
// otherwise, also when fn panics.
func settle(ctx context.Context, tx pgx.Tx, fn func(tx DB) error) error {
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked, or ended its goroutine (runtime.Goexit, as a test's
		// FailNow does): the transaction must not stay open on its
		// connection. The panic, if any, is the one to report.
		p := recover()
		_ = rollback(ctx, tx)
		if p != nil {
			panic(p)
		}
	}()
	err := fn(tx)
	returned = true
	if err != nil {
		dropSilent(tx.Conn()) // before the rollback gives the connection back
		return fault.Aborted(err, ownClass(ctx, err), rollback(ctx, tx))
	}
	if err := ending(tx, func() error { return tx.Commit(ctx) }); err != nil {
		return fmt.Errorf("taskpg: commit a transaction: %w", fault.Transient(err, classify(err)))
	}
	return nil
}

// ownClass is the class of err, the failure of fn in Transact: classify's,
// but none for a statement of fn's own that the server's statement_timeout
// stopped (57014 while ctx goes on): the transaction's work took too long,
// which is the caller's own failure, not the database's. A call of a
// repository inside fn that was stopped so says ErrUnavailable itself.
func ownClass(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if ctx.Err() == nil && errors.As(err, &pgErr) && pgErr.Code == "57014" && !errors.Is(err, taskapi.ErrUnavailable) {
		return nil
	}
	return classify(err)
}

// rollback rolls tx back, even once ctx is done (see finishing), and
// returns the failure, unless tx had ended already: fn may have ended it.
// A rollback fails when the connection broke (and pgx closes a connection
// whose rollback failed).
func rollback(ctx context.Context, tx pgx.Tx) error {
	end, cancel := finishing(ctx)
	defer cancel()
	if err := ending(tx, func() error { return tx.Rollback(end) }); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}
