package taskproc_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// TestMain fails the package when a goroutine outlives its tests: every
// test stops what it started, and a runtime that left a goroutine behind
// shows here.
func TestMain(m *testing.M) {
	_ = mysql.SetLogger(&mysql.NopLogger{}) // the cut tests break connections on purpose
	goleak.VerifyTestMain(m)
}

// fullRepo is everything the repositories of the suite offer.
type fullRepo[Tx any] interface {
	taskapi.Repository[Tx]
	taskapi.Activator[Tx]
	taskapi.Capacitor[Tx]
	taskapi.Leader[Tx]
	taskapi.Canceller[Tx]
}

// backend is a repository implementation on a database, for the suite.
type backend[Tx any] struct {
	open     func(t *testing.T) Tx
	transact func(db Tx) taskproc.Transact[Tx]
	newRepo  func(owner string) (fullRepo[Tx], error)
	// mine is the name of a table of the user's own; exec runs a statement
	// without arguments; count runs a query that returns one integer.
	mine  string
	exec  func(ctx context.Context, db Tx, statement string) error
	count func(ctx context.Context, db Tx, query string) (int, error)
	// single is set when the database has one connection (SQLite): a
	// transaction that never ends holds up every other.
	single bool
}

var pgBackend = backend[taskpg.DB]{
	open:     func(t *testing.T) taskpg.DB { return testdb.Postgres(t) },
	transact: func(db taskpg.DB) taskproc.Transact[taskpg.DB] { return taskpg.Transact(db) },
	newRepo: func(owner string) (fullRepo[taskpg.DB], error) {
		return taskpg.New(owner)
	},
	mine: "public.mine", // the test connections have an empty search_path
	exec: func(ctx context.Context, db taskpg.DB, statement string) error {
		_, err := db.Exec(ctx, statement)
		return err
	},
	count: func(ctx context.Context, db taskpg.DB, query string) (int, error) {
		var n int
		err := db.QueryRow(ctx, query, pgx.QueryExecModeSimpleProtocol).Scan(&n)
		return n, err
	},
}

// ansiBackend is taskansi of dialect on databases that open returns, with
// transactions begun with opts.
func ansiBackend(dialect taskansi.Dialect, opts *sql.TxOptions, open func(t testing.TB) *sql.DB) backend[taskansi.DB] {
	return backend[taskansi.DB]{
		open: func(t *testing.T) taskansi.DB { return open(t) },
		transact: func(db taskansi.DB) taskproc.Transact[taskansi.DB] {
			return taskansi.Transact(db.(*sql.DB), opts)
		},
		newRepo: func(owner string) (fullRepo[taskansi.DB], error) {
			return taskansi.New(dialect, owner)
		},
		mine: "mine",
		exec: func(ctx context.Context, db taskansi.DB, statement string) error {
			_, err := db.ExecContext(ctx, statement)
			return err
		},
		count: func(ctx context.Context, db taskansi.DB, query string) (int, error) {
			var n int
			err := db.QueryRowContext(ctx, query).Scan(&n)
			return n, err
		},
		single: dialect == taskansi.SQLite,
	}
}

// The suite runs on taskpg here, under the race detector, and on taskansi
// with SQLite and MySQL in heavy_suites_test.go.
func TestTaskpg(t *testing.T) { suite(t, pgBackend) }
