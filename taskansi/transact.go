package taskansi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/internal/fault"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Transact returns a function that runs fn in a transaction of db begun with
// opts (nil: the driver's defaults; on MySQL choose READ COMMITTED, see the
// package documentation): it commits when fn returns nil and rolls back
// otherwise, also when fn panics. Its type is that of
// taskproc.Transact[taskansi.DB], the transaction function of the consumer
// runtime:
//
//	client, err := taskproc.New(repo, taskansi.Transact(db, nil))
//
// When fn fails, the error keeps fn's error in its chain, so that
// errors.Is finds fn's own sentinels, and adds taskapi.ErrConflict or
// taskapi.ErrUnavailable when fn's error is a failure of the database of
// that class (a statement of the caller's own that met a deadlock, or a
// killed session), and taskapi.ErrUnavailable when the rollback failed: the
// connection broke. Other failures of the database (a unique violation on
// the caller's own table, say) stay the caller's, with no sentinel. A
// begin or commit that fails is reported the same way: one that the
// database refuses for a concurrent transaction (SQLite BUSY, a MySQL
// deadlock) is taskapi.ErrConflict, so that the caller may run fn again; a
// commit that is ErrUnavailable may have committed. The transaction runs on
// a connection held for it (db.Conn), so that a connection that broke is
// seen also where the driver's error does not tell.
func Transact(db *sql.DB, opts *sql.TxOptions) func(ctx context.Context, fn func(tx DB) error) error {
	return func(ctx context.Context, fn func(tx DB) error) error {
		conn, tx, err := begin(ctx, db, opts)
		if err != nil {
			return fmt.Errorf("taskansi: begin a transaction: %w", fault.Transient(err, classify(err)))
		}
		defer conn.Close()
		return settle(conn, tx, fn)
	}
}

// beginAttempts bounds how often begin tries another connection.
const beginAttempts = 3

// begin begins a transaction on a connection of db held for it, which
// tells afterwards whether it broke (see failed). Like db.BeginTx, it tries
// another connection when the driver found one bad before it sent anything
// (driver.ErrBadConn), a few times.
func begin(ctx context.Context, db *sql.DB, opts *sql.TxOptions) (*sql.Conn, *sql.Tx, error) {
	for attempt := 1; ; attempt++ {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		tx, err := conn.BeginTx(ctx, opts)
		if err == nil {
			return conn, tx, nil
		}
		_ = conn.Close() // err is the one to report
		if !errors.Is(err, driver.ErrBadConn) || attempt == beginAttempts {
			return nil, nil, err
		}
	}
}

// settle runs fn in tx, a transaction on conn, and ends tx: a commit when
// fn succeeds, a rollback otherwise, also when fn panics.
func settle(conn *sql.Conn, tx *sql.Tx, fn func(tx DB) error) error {
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback() // the panic is the one to report
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		undo := rollback(tx)
		return fault.Aborted(err, failed(conn, err), undo)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("taskansi: commit a transaction: %w", fault.Transient(err, failed(conn, err)))
	}
	return nil
}

// rollback rolls tx back and returns the failure, unless tx had ended
// already (sql.ErrTxDone: database/sql rolls back a transaction whose
// context is done, and fn may have ended it). A rollback fails when the
// connection broke.
func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// failed returns the class of err, a failure of a statement on conn whose
// transaction has ended: classify's, else ErrUnavailable when the driver
// says that conn is closed. go-sql-driver reports a connection that broke
// with an error that has neither a number nor a type of its own ("invalid
// connection"), and closes it: its IsValid (driver.Validator) then tells.
func failed(conn *sql.Conn, err error) error {
	if sentinel := classify(err); sentinel != nil {
		return sentinel
	}
	valid := true
	rawErr := conn.Raw(func(dc any) error {
		if v, ok := dc.(driver.Validator); ok {
			valid = v.IsValid()
		}
		return nil
	})
	if rawErr != nil || !valid {
		return taskapi.ErrUnavailable
	}
	return nil
}
