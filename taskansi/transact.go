package taskansi

import (
	"context"
	"database/sql"
)

// Transact returns a function that runs fn in a transaction of db begun with
// opts (nil: the driver's defaults; on MySQL choose READ COMMITTED, see the
// package documentation): it commits when fn returns nil and rolls back
// otherwise, also when fn panics. A begin or commit that the database
// refuses for a concurrent transaction (SQLite BUSY, a MySQL deadlock) fails
// with taskapi.ErrConflict in the chain, so that the caller may run fn again. Its type is that of
// taskproc.Transact[taskansi.DB], the transaction function of the consumer
// runtime:
//
//	client, err := taskproc.New(repo, taskansi.Transact(db, nil))
func Transact(db *sql.DB, opts *sql.TxOptions) func(ctx context.Context, fn func(tx DB) error) error {
	return func(ctx context.Context, fn func(tx DB) error) (err error) {
		tx, err := db.BeginTx(ctx, opts)
		if err != nil {
			return wrapf(err, "begin a transaction")
		}
		defer func() {
			if err != nil {
				_ = tx.Rollback() // err is the one to report
			}
		}()
		defer func() {
			if p := recover(); p != nil {
				_ = tx.Rollback()
				panic(p)
			}
		}()
		if err = fn(tx); err != nil {
			return err
		}
		if err = tx.Commit(); err != nil {
			return wrapf(err, "commit a transaction")
		}
		return nil
	}
}
