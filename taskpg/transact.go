package taskpg

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Transact returns a function that runs fn in a transaction begun on db (a
// pool; on a transaction, a savepoint): it commits when fn returns nil and
// rolls back otherwise, also when fn panics. Its type is that of
// taskproc.Transact[taskpg.DB], the transaction function of the consumer
// runtime:
//
//	client, err := taskproc.New(repo, taskpg.Transact(pool))
func Transact(db DB) func(ctx context.Context, fn func(tx DB) error) error {
	return func(ctx context.Context, fn func(tx DB) error) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return fn(tx) })
	}
}
