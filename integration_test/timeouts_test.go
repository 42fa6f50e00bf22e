package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
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
// value is one second. The cases set up their topics on the same sessions:
// at 300 ms, creating a topic's partition met the timeout in a run of the
// test command beside other work.
const (
	pgStatementTimeout = time.Second
	mysqlLockTimeout   = "1"
)

// mysqlStatementTimeout is MariaDB's max_statement_time of the sessions of
// TestTaskansiMySQLStatementTimeout, in seconds: it ends a statement that
// waits for a lock long before lock_wait_timeout does, and leaves the
// statements that set the case up, on the same sessions, time enough on a
// loaded machine (0.3 s did not: a poll of the set-up met it in CI).
const mysqlStatementTimeout = "1"

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

// TestTaskansiMySQLStatementTimeout checks that taskansi gives up a call
// whose statement MariaDB ends for its max_statement_time: the error keeps
// ER_STATEMENT_TIMEOUT (1969) in the chain, as taskapi.ErrUnavailable, the
// class of PostgreSQL's statement_timeout (57014) and MySQL's
// max_execution_time (3024), is no conflict (not retried), and the call
// has changed nothing. It needs MariaDB, whose variable it sets.
func TestTaskansiMySQLStatementTimeout(t *testing.T) {
	t.Parallel()
	b := ansiBackend(taskansi.MySQL, func(t *testing.T) *sql.DB {
		cfg := testdb.MySQLConfig(t)
		// The schema is made without the timeout: on a busy machine a
		// migration's DDL can outlast it.
		plain := openMySQL(t, cfg)
		requireMariaDB(t, plain)
		if err := migrations.Up(t.Context(), plain, migrations.MySQL); err != nil {
			t.Fatal(err)
		}
		timed := cfg.Clone()
		timed.Params = map[string]string{"max_statement_time": mysqlStatementTimeout}
		db := openMySQL(t, timed)
		db.SetMaxOpenConns(timeoutConns)
		return db
	})
	b.Block = mysqlBlock.ansi
	conformance.StatementTimeouts(t, b, func(t *testing.T, call string, err error) {
		if call == "Refresh" { // ANALYZE TABLE reports a failure as a row, without its number
			if !strings.Contains(err.Error(), "max_statement_time") {
				t.Errorf("%s timed out: error = %v, want the server's report of max_statement_time", call, err)
			}
			return
		}
		wantRefused("1969")(t, call, err)
	})
}

// TestPostgresRoleStatementTimeout checks that a statement_timeout set on
// the role, not on the session, ends the calls of taskpg and of taskansi
// that wait for a lock in the same way: SQLSTATE 57014 as
// taskapi.ErrUnavailable, changing nothing.
func TestPostgresRoleStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx, dbURL := t.Context(), testdb.PostgresURL(t)
	timed := roleURL(t, dbURL, "CREATE ROLE {role} LOGIN",
		"ALTER ROLE {role} SET statement_timeout = "+strconv.FormatInt(pgStatementTimeout.Milliseconds(), 10))
	// The owners and the topic are there before the lock, which the
	// calls then wait for.
	const lock = "LOCK TABLE public.task, public.task_owner IN ACCESS EXCLUSIVE MODE"
	t.Run("taskpg", func(t *testing.T) {
		admin := testdb.Pool(t, dbURL, 1)
		repo := must[*taskpg.Repository](t, "New")(taskpg.New("timed"))
		must[bool](t, "Initialize")(repo.Initialize(ctx, admin, "t"))
		must[bool](t, "Register")(repo.Register(ctx, admin))
		tx := must[pgx.Tx](t, "begin")(admin.Begin(ctx))
		defer tx.Rollback(context.Background())
		must[pgconn.CommandTag](t, lock)(tx.Exec(ctx, lock))
		refusedCalls(t, repo, taskpg.DB(tx), taskpg.DB(testdb.Pool(t, timed, 2)), wantRefused("57014"))
	})
	t.Run("taskansi", func(t *testing.T) {
		admin := ansiPostgres(t, dbURL)
		repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.Postgres, "timed-ansi"))
		must[bool](t, "Initialize")(repo.Initialize(ctx, admin, "t"))
		must[bool](t, "Register")(repo.Register(ctx, admin))
		tx := must[*sql.Tx](t, "begin")(admin.BeginTx(ctx, nil))
		defer tx.Rollback()
		must[sql.Result](t, lock)(tx.ExecContext(ctx, lock))
		refusedCalls(t, repo, taskansi.DB(tx), taskansi.DB(ansiPostgres(t, timed)), wantRefused("57014"))
	})
}

// idleTimeout is how long the sessions of the idle tests may idle in a
// transaction before the server ends them: PostgreSQL's
// idle_in_transaction_session_timeout and MariaDB's
// idle_transaction_timeout, whose unit is a second.
const idleTimeout = time.Second

// TestTaskpgTransactOfAnIdleSession checks that taskpg.Transact reports a
// transaction whose session the server ended, as it idled longer than
// idle_in_transaction_session_timeout, as taskapi.ErrUnavailable; the
// function's call that met the ended session failed with SQLSTATE 25P03
// (idle_in_transaction_session_timeout) as ErrUnavailable.
func TestTaskpgTransactOfAnIdleSession(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	admin := testdb.Pool(t, dbURL, 2)
	pool := testdb.Pool(t, dbURL, 2, "idle_in_transaction_session_timeout", strconv.FormatInt(idleTimeout.Milliseconds(), 10))
	repo := must[*taskpg.Repository](t, "New")(taskpg.New("idle"))
	idleTransactions(t, repo, taskpg.DB(admin), taskpg.Transact(pool), func(t *testing.T, tx taskpg.DB) {
		t.Helper()
		ctx := t.Context()
		endSession(t,
			func() (id int64, err error) {
				err = tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&id)
				return id, err
			},
			func(int64) error { return nil }, // the server ends it
			func(id int64) (n int, err error) {
				err = admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer", id).Scan(&n)
				return n, err
			})
	}, wantRefused("25P03"))
}

// TestTaskansiTransactOfAnIdleSession is TestTaskpgTransactOfAnIdleSession
// for taskansi.Transact, on PostgreSQL and on MariaDB, which ends a
// session after idle_transaction_timeout. go-sql-driver tells the
// function's call that met the ended session only "invalid connection",
// which has no number, unless its write failed first (driver.ErrBadConn,
// ErrUnavailable): the transaction function asks the driver afterwards.
func TestTaskansiTransactOfAnIdleSession(t *testing.T) {
	t.Parallel()
	idle := strconv.FormatInt(int64(idleTimeout.Seconds()), 10)
	for name, c := range map[string]struct {
		dialect taskansi.Dialect
		open    func(t *testing.T) (admin, idling *sql.DB)
		want    func(t *testing.T, call string, err error)
	}{
		"Postgres": {taskansi.Postgres, func(t *testing.T) (admin, idling *sql.DB) {
			dbURL := testdb.PostgresURL(t)
			ms := strconv.FormatInt(idleTimeout.Milliseconds(), 10)
			return ansiPostgres(t, dbURL), ansiPostgres(t, dbURL, "idle_in_transaction_session_timeout", ms)
		}, wantRefused("25P03")},
		"MySQL": {taskansi.MySQL, func(t *testing.T) (admin, idling *sql.DB) {
			cfg := testdb.MySQLConfig(t)
			admin = openMySQL(t, cfg)
			requireMariaDB(t, admin)
			if err := migrations.Up(t.Context(), admin, migrations.MySQL); err != nil {
				t.Fatal(err)
			}
			cfg.Params = map[string]string{"idle_transaction_timeout": idle}
			return admin, openMySQL(t, cfg)
		}, func(t *testing.T, call string, err error) {
			if !errors.Is(err, taskapi.ErrUnavailable) && !errors.Is(err, mysql.ErrInvalidConn) {
				t.Errorf("%s: error = %v, want %v or go-sql-driver's %v", call, err, taskapi.ErrUnavailable, mysql.ErrInvalidConn)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			admin, db := c.open(t)
			repo := must[*taskansi.Repository](t, "New")(taskansi.New(c.dialect, "idle"))
			s := transactServers[name]
			idleTransactions(t, repo, taskansi.DB(admin), taskansi.Transact(db, nil), func(t *testing.T, tx taskansi.DB) {
				t.Helper()
				if err := s.awaitServerEnd(t.Context(), admin, tx); err != nil {
					t.Error(err)
				}
			}, c.want)
		})
	}
}

// idleTransactions registers repo's owner on admin and runs transactions
// with transact whose functions idle, after a first Heartbeat, until the
// server has ended their session (awaitEnd returns then). It checks that
// the function's second Heartbeat fails as want accepts, that transact
// reports the function's error as taskapi.ErrUnavailable, keeping it in
// the chain, as it does a commit that meets the ended session, and that a
// transaction afterwards succeeds.
func idleTransactions[Tx any](t *testing.T, repo taskapi.Repository[Tx], admin Tx, transact func(ctx context.Context, fn func(tx Tx) error) error,
	awaitEnd func(t *testing.T, tx Tx), want func(t *testing.T, call string, err error)) {
	t.Helper()
	ctx := t.Context()
	must[bool](t, "Register")(repo.Register(ctx, admin))
	var callErr error
	err := transact(ctx, func(tx Tx) error {
		if err := repo.Heartbeat(ctx, tx); err != nil {
			return err
		}
		awaitEnd(t, tx)
		callErr = repo.Heartbeat(ctx, tx)
		return fmt.Errorf("%w: %w", errMine, callErr)
	})
	want(t, "Heartbeat in a session ended for idling", callErr)
	if !errors.Is(err, errMine) {
		t.Errorf("a transaction whose session ended for idling: error %v, want the function's error in the chain", err)
	}
	wantOnlySentinels(t, "a transaction whose session ended for idling", err, taskapi.ErrUnavailable)
	err = transact(ctx, func(tx Tx) error {
		if err := repo.Heartbeat(ctx, tx); err != nil {
			return err
		}
		awaitEnd(t, tx)
		return nil
	})
	wantOnlySentinels(t, "the commit of a transaction whose session ended for idling", err, taskapi.ErrUnavailable)
	if err := transact(ctx, func(tx Tx) error { return repo.Heartbeat(ctx, tx) }); err != nil {
		t.Errorf("a transaction afterwards: %v", err)
	}
}
