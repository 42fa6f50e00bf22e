package taskpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
// or a terminated session), and taskapi.ErrUnavailable when the rollback
// failed: the connection broke. Other failures of the server (a unique
// violation on the caller's own table, say) stay the caller's, with no
// sentinel. A BEGIN or COMMIT that fails is reported the same way; a
// COMMIT that is ErrUnavailable may have committed. When ctx carries
// taskapi.SingleStatement and db is a pool or a connection outside a
// transaction, fn runs on db itself, its one round trip committing by
// itself.
func Transact(db DB) func(ctx context.Context, fn func(tx DB) error) error {
	return func(ctx context.Context, fn func(tx DB) error) error {
		if taskapi.IsSingleStatement(ctx) && scopeOf(db) == own {
			// fn's one round trip commits by itself on a pool or a
			// connection outside a transaction: no BEGIN and COMMIT.
			return fn(db)
		}
		tx, err := db.Begin(ctx)
		if err != nil {
			return fmt.Errorf("taskpg: begin a transaction: %w", fault.Transient(err, classify(err)))
		}
		return settle(ctx, tx, fn)
	}
}

// settle runs fn in tx and ends tx: a commit when fn succeeds, a rollback
// otherwise, also when fn panics.
func settle(ctx context.Context, tx pgx.Tx, fn func(tx DB) error) error {
	defer func() {
		if p := recover(); p != nil {
			_ = rollback(ctx, tx) // the panic is the one to report
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		return fault.Aborted(err, classify(err), rollback(ctx, tx))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("taskpg: commit a transaction: %w", fault.Transient(err, classify(err)))
	}
	return nil
}

// rollback rolls tx back, even once ctx is done (see finishing), and
// returns the failure, unless tx had ended already: fn may have ended it.
// A rollback fails when the connection broke (and pgx closes a connection
// whose rollback failed).
func rollback(ctx context.Context, tx pgx.Tx) error {
	end, cancel := finishing(ctx)
	defer cancel()
	if err := tx.Rollback(end); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}
