package integration_test

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The statement timeouts of the tests' sessions: PostgreSQL's
// statement_timeout, and MySQL's lock_wait_timeout (metadata locks, which
// LOCK TABLES holds) and innodb_lock_wait_timeout (row locks), whose least
// value is one second.
const (
	pgStatementTimeout = 300 * time.Millisecond
	mysqlLockTimeout   = "1"
)

// timeoutConns is the size of the pools of the timeout tests: every call
// waits at once, each on a connection of its own.
const timeoutConns = 64

// TestTaskpgStatementTimeout checks that taskpg gives up a call whose
// statement PostgreSQL cancels for its statement_timeout: the error keeps
// SQLSTATE 57014 in the chain, as taskapi.ErrUnavailable, is no conflict
// (not retried), and the call has changed nothing.
func TestTaskpgStatementTimeout(t *testing.T) {
	t.Parallel()
	b := pgBackend()
	b.Open = func(t *testing.T) taskpg.DB { return timedPool(t) }
	conformance.StatementTimeouts(t, b, wantPgCancelled)
}

// TestTaskansiPostgresStatementTimeout is TestTaskpgStatementTimeout for
// taskansi on PostgreSQL.
func TestTaskansiPostgresStatementTimeout(t *testing.T) {
	t.Parallel()
	b := ansiBackend(taskansi.Postgres, func(t *testing.T) *sql.DB {
		db := stdlib.OpenDB(*timedPool(t).Config().ConnConfig)
		db.SetMaxOpenConns(timeoutConns)
		t.Cleanup(func() { db.Close() })
		return db
	})
	b.Block = postgresBlock.ansi
	conformance.StatementTimeouts(t, b, wantPgCancelled)
}

// TestTaskansiMySQLLockWaitTimeout checks that taskansi gives up a call
// whose statement MySQL ends for its lock wait timeouts: the error keeps
// ER_LOCK_WAIT_TIMEOUT (1205) in the chain, as taskapi.ErrConflict, which
// the call retried a bounded number of times only, and the call has
// changed nothing.
func TestTaskansiMySQLLockWaitTimeout(t *testing.T) {
	t.Parallel()
	b := ansiBackend(taskansi.MySQL, timedMySQL)
	b.Block = mysqlBlock.ansi
	conformance.StatementTimeouts(t, b, func(t *testing.T, call string, err error) {
		if call == "Refresh" { // ANALYZE TABLE reports a failure as a row, without its number
			if !strings.Contains(err.Error(), "Lock wait timeout exceeded") {
				t.Errorf("%s timed out: error = %v, want the server's report of the lock wait timeout", call, err)
			}
			return
		}
		var myErr *mysql.MySQLError
		if !errors.As(err, &myErr) || myErr.Number != 1205 || !errors.Is(err, taskapi.ErrConflict) {
			t.Errorf("%s timed out: error = %v, want ER_LOCK_WAIT_TIMEOUT (1205) in the chain, as %v", call, err, taskapi.ErrConflict)
		}
	})
}

// wantPgCancelled fails t unless err keeps the SQLSTATE of a cancelled
// statement (57014) in its chain, is taskapi.ErrUnavailable and no
// conflict.
func wantPgCancelled(t *testing.T, call string, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Errorf("%s timed out: error = %v, want SQLSTATE 57014 in the chain", call, err)
	}
	if !errors.Is(err, taskapi.ErrUnavailable) {
		t.Errorf("%s timed out: error = %v, want %v", call, err, taskapi.ErrUnavailable)
	}
	if errors.Is(err, taskapi.ErrConflict) {
		t.Errorf("%s timed out: error = %v, want no %v: a timeout is not retried", call, err, taskapi.ErrConflict)
	}
}

// timedPool opens a pool on a fresh database whose sessions carry
// pgStatementTimeout.
func timedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	timeout := strconv.FormatInt(pgStatementTimeout.Milliseconds(), 10)
	return testdb.Pool(t, testdb.PostgresURL(t), timeoutConns, "statement_timeout", timeout)
}

// timedMySQL opens a fresh, migrated MySQL or MariaDB database whose
// sessions carry mysqlLockTimeout.
func timedMySQL(t *testing.T) *sql.DB {
	t.Helper()
	cfg := testdb.MySQLConfig(t)
	cfg.Params = map[string]string{"lock_wait_timeout": mysqlLockTimeout, "innodb_lock_wait_timeout": mysqlLockTimeout}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(timeoutConns)
	t.Cleanup(func() { db.Close() })
	if err := migrations.Up(t.Context(), db, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	return db
}
