package taskansi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/taskrepo/taskrepo/internal/bound"
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
// that class (a statement of the caller's own that met a deadlock, a
// killed session, one the server ended for idling, a write that a
// read-only server refused), and taskapi.ErrUnavailable when the rollback
// failed: the connection broke. Other failures of the database (a unique
// violation on the caller's own table, or a statement of the caller's own
// that the server's statement timeout stopped: PostgreSQL's 57014,
// MariaDB's 1969, MySQL's 3024) stay the caller's, with no sentinel. A
// begin or commit that fails is reported the same way: one that the
// database refuses for a concurrent transaction (SQLite BUSY, a MySQL
// deadlock) is taskapi.ErrConflict, so that the caller may run fn again; a
// commit that is ErrUnavailable may have committed. The transaction runs on
// a connection held for it (db.Conn), so that a connection that broke is
// seen also where the driver's error does not tell. When ctx is
// taskapi.Bounded and db's driver is PostgreSQL's (postgresDrivers), the
// transaction is bounded on the server from its start. db answers
// taskapi.PoolSize with its MaxOpenConnections (0: no limit), and a wait
// for one of its connections that ctx ended while every one was in use
// says that the pool was exhausted.
func Transact(db *sql.DB, opts *sql.TxOptions) func(ctx context.Context, fn func(tx DB) error) error {
	bounds := boundsServer(db)
	return func(ctx context.Context, fn func(tx DB) error) error {
		if taskapi.AnswerPoolSize(ctx, db.Stats().MaxOpenConnections) {
			return nil
		}
		full := poolFull(db)
		conn, tx, err := begin(ctx, db, opts)
		if err == nil && bounds {
			err = boundTx(ctx, conn, tx)
		}
		if err != nil {
			return fmt.Errorf("taskansi: begin a transaction: %w", fault.Transient(exhausted(ctx, db, full, err), classify(err)))
		}
		defer conn.Close()
		return settle(ctx, conn, tx, fn)
	}
}

// postgresDrivers are the packages of the database/sql drivers of
// PostgreSQL, whose transactions Transact bounds on the server as
// taskapi.Bounded asks: the package imports no driver, so it knows them by
// name. Another driver's transactions are bounded by the server's own
// settings only.
var postgresDrivers = []string{"github.com/jackc/pgx/v5/stdlib", "github.com/jackc/pgx/v4/stdlib", "github.com/lib/pq"}

// boundsServer reports whether db's driver is one of postgresDrivers.
func boundsServer(db *sql.DB) bool {
	if db == nil {
		return false
	}
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return slices.Contains(postgresDrivers, t.PkgPath())
}

// boundTx bounds tx, just begun on conn, on the server when ctx is
// taskapi.Bounded; a failure rolls it back and closes conn.
func boundTx(ctx context.Context, conn *sql.Conn, tx *sql.Tx) error {
	d, ok := taskapi.BoundOf(ctx)
	if !ok {
		return nil
	}
	if _, err := tx.ExecContext(ctx, bound.Postgres(d)); err != nil {
		_ = tx.Rollback()
		_ = conn.Close()
		return err
	}
	return nil
}

// exhausted adds to err, the failure of a begin on db whose context ended,
// that every connection db may open was in use when it began (full) or
// when it gave up: the wait was for a connection, and the pool is too
// small for what holds it.
func exhausted(ctx context.Context, db *sql.DB, full bool, err error) error {
	if ctx.Err() == nil || (!full && !poolFull(db)) {
		return err
	}
	return fmt.Errorf("pool exhausted: all %d connections of the pool were in use: %w", db.Stats().MaxOpenConnections, err)
}

// poolFull reports whether every connection db may open is in use.
func poolFull(db *sql.DB) bool {
	stats := db.Stats()
	return stats.MaxOpenConnections > 0 && stats.InUse >= stats.MaxOpenConnections
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
func settle(ctx context.Context, conn *sql.Conn, tx *sql.Tx, fn func(tx DB) error) error {
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked, or ended its goroutine (runtime.Goexit, as a test's
		// FailNow does): the transaction must not stay open on its
		// connection, whose Close would wait for it. The panic, if any,
		// is the one to report.
		p := recover()
		_ = tx.Rollback()
		if p != nil {
			panic(p)
		}
	}()
	err := fn(tx)
	returned = true
	if err != nil {
		undo := rollback(tx)
		class := failed(conn, err)
		if ctx.Err() == nil && statementTimeout(err) && !errors.Is(err, taskapi.ErrUnavailable) {
			class = nil // the caller's own statement ran too long: its failure, not the database's
		}
		return fault.Aborted(err, class, undo)
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
