package taskproc_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// No completion function runs for ever. A function whose transaction a
// timeout of the server ends is its own failure or a run of the retry
// policy's attempts, never a database that is away for the runtime to
// wait out: in each case below the task ends Failed, its function ran a
// bounded number of times, and none of its writes committed. The sessions
// get the server's timeouts as their defaults, as a role's settings give
// them (startup parameters: the same session defaults, per test):
//
//   - a statement of the function's own that the server's statement
//     timeout stops (PostgreSQL 57014, MariaDB 1969) is the function's
//     failure: one run;
//   - a unique violation in the function (23505, 1062) likewise;
//   - a transaction the server ends for sitting idle (PostgreSQL's
//     idle_in_transaction_session_timeout, MariaDB's
//     idle_transaction_timeout), and a serialization failure or deadlock
//     in the function (40001, 1213), are runs whose transaction did not
//     commit: each counts as an attempt, and after MaxAttempts the task
//     ends with the last error.

// timeoutAttempts is the retry policy's MaxAttempts in these tests.
const timeoutAttempts = 3

// timeoutRig is a backend whose sessions get the server's timeouts, and
// the statements of its SQL that meet them.
type timeoutRig[Tx any] struct {
	// with returns the backend on a database whose sessions have a
	// statement timeout of statement and an idle-in-transaction timeout
	// of idle (zero: none).
	with func(statement, idle time.Duration) backend[Tx]
	// slow takes three seconds; conflict fails as a serialization failure
	// (deadlock) does; duplicate inserts a row into a table with a unique
	// key twice.
	slow, conflict string
}

func TestCompletionFunctionsEndUnderServerTimeouts(t *testing.T) {
	t.Run("taskpg", func(t *testing.T) { t.Parallel(); timeoutCases(t, pgTimeoutRig()) })
	t.Run("taskansi-postgres", func(t *testing.T) { t.Parallel(); timeoutCases(t, ansiPostgresTimeoutRig()) })
	t.Run("taskansi-mysql", func(t *testing.T) { t.Parallel(); timeoutCases(t, mysqlTimeoutRig()) })
}

// pgStatements are PostgreSQL's statements of the rigs.
const (
	pgSlow     = "SELECT pg_sleep(3)"
	pgConflict = "DO $$ BEGIN RAISE EXCEPTION 'could not serialize (a test)' USING ERRCODE = '40001'; END $$"
)

func pgTimeoutRig() timeoutRig[taskpg.DB] {
	return timeoutRig[taskpg.DB]{
		with: func(statement, idle time.Duration) backend[taskpg.DB] {
			b := pgBackend
			b.open = func(t *testing.T) taskpg.DB {
				return testdb.Pool(t, testdb.PostgresURL(t), 8, pgTimeouts(statement, idle)...)
			}
			return b
		},
		slow: pgSlow, conflict: pgConflict,
	}
}

func ansiPostgresTimeoutRig() timeoutRig[taskansi.DB] {
	return timeoutRig[taskansi.DB]{
		with: func(statement, idle time.Duration) backend[taskansi.DB] {
			b := ansiBackend(taskansi.Postgres, nil, func(t testing.TB) *sql.DB {
				cfg := testdb.Pool(t, testdb.PostgresURL(t), 1, pgTimeouts(statement, idle)...).Config().ConnConfig
				db := stdlib.OpenDB(*cfg)
				db.SetMaxOpenConns(8)
				t.Cleanup(func() { db.Close() })
				return db
			})
			b.mine = "public.mine" // the test connections have an empty search_path
			return b
		},
		slow: pgSlow, conflict: pgConflict,
	}
}

// pgTimeouts are the run-time parameters of PostgreSQL's timeouts, zero
// for none.
func pgTimeouts(statement, idle time.Duration) []string {
	var params []string
	if statement > 0 {
		params = append(params, "statement_timeout", fmt.Sprint(statement.Milliseconds()))
	}
	if idle > 0 {
		params = append(params, "idle_in_transaction_session_timeout", fmt.Sprint(idle.Milliseconds()))
	}
	return params
}

func mysqlTimeoutRig() timeoutRig[taskansi.DB] {
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return timeoutRig[taskansi.DB]{
		with: func(statement, idle time.Duration) backend[taskansi.DB] {
			return ansiBackend(taskansi.MySQL, readCommitted, func(t testing.TB) *sql.DB {
				cfg := testdb.MySQLConfig(t)
				cfg.Params = map[string]string{}
				if statement > 0 {
					cfg.Params["max_statement_time"] = fmt.Sprint(statement.Seconds())
				}
				if idle > 0 {
					cfg.Params["idle_transaction_timeout"] = fmt.Sprint(int(idle.Seconds())) // whole seconds
				}
				db, err := sql.Open("mysql", cfg.FormatDSN())
				if err != nil {
					t.Fatal(err)
				}
				db.SetMaxOpenConns(8)
				t.Cleanup(func() { db.Close() })
				if err := migrations.Up(context.Background(), db, migrations.MySQL); err != nil {
					t.Fatal(err)
				}
				return db
			})
		},
		slow:     "SELECT SLEEP(3)",
		conflict: "BEGIN NOT ATOMIC SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'Deadlock found (a test)'; END",
	}
}

// timeoutCases runs the cases of rig.
func timeoutCases[Tx any](t *testing.T, rig timeoutRig[Tx]) {
	t.Run("AStatementTimeoutFailsTheTaskAtOnce", func(t *testing.T) {
		t.Parallel()
		// A second: the set-up's statements (Initialize) fit in it.
		e := newEnv(t, rig.with(time.Second, 0))
		runs, info := e.runUntilEnded(func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return taskapi.Decision{}, err
			}
			return taskapi.Decision{Result: taskapi.Success}, e.b.exec(ctx, tx, rig.slow)
		})
		e.wantEnded(info, runs, 1, "statement")
	})
	t.Run("AUniqueViolationFailsTheTaskAtOnce", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, rig.with(0, 0))
		if err := e.b.exec(e.ctx, e.db, "CREATE TABLE "+e.b.mine+"_unique (id int PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		runs, info := e.runUntilEnded(func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return taskapi.Decision{}, err
			}
			insert := "INSERT INTO " + e.b.mine + "_unique (id) VALUES (1)"
			if err := e.b.exec(ctx, tx, insert); err != nil {
				return taskapi.Decision{}, err
			}
			return taskapi.Decision{Result: taskapi.Success}, e.b.exec(ctx, tx, insert)
		})
		e.wantEnded(info, runs, 1, "uplicate")
	})
	t.Run("AnIdleTimeoutCountsAsAnAttempt", func(t *testing.T) {
		t.Parallel()
		// MariaDB counts its idle_transaction_timeout in whole seconds.
		e := newEnv(t, rig.with(0, time.Second))
		runs, info := e.runUntilEnded(func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return taskapi.Decision{}, err
			}
			time.Sleep(2500 * time.Millisecond) // idle in the transaction, past the server's timeout
			return taskapi.Decision{Result: taskapi.Success}, nil
		})
		e.wantEnded(info, runs, timeoutAttempts, fmt.Sprintf("ran %d times", timeoutAttempts))
	})
	t.Run("AConflictCountsAsAnAttempt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, rig.with(0, 0))
		runs, info := e.runUntilEnded(func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
			if err := e.writeEffect(ctx, tx, task); err != nil {
				return taskapi.Decision{}, err
			}
			return taskapi.Decision{Result: taskapi.Success}, e.b.exec(ctx, tx, rig.conflict)
		})
		e.wantEnded(info, runs, timeoutAttempts, fmt.Sprintf("ran %d times", timeoutAttempts), "(a test)")
	})
}

// runUntilEnded runs one task with fn under ParallelTx until it ends, and
// returns how often fn ran and the task.
func (e *env[Tx]) runUntilEnded(fn taskproc.TaskTxFunc[Tx]) (int32, taskapi.Info) {
	e.t.Helper()
	e.effects()
	task := e.push("only")[0]
	var runs atomic.Int32
	m := e.manager(taskproc.ParallelTx(1, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
		runs.Add(1)
		return fn(ctx, tx, task)
	}), taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: timeoutAttempts, Backoff: func(int) time.Duration { return 0 }}))
	e.start(m)
	e.allIn(1, taskapi.Failed, taskapi.Succeeded)
	stopWithin(e.t, m.Stop) // no run after the count
	return runs.Load(), e.info(task)
}

// wantEnded checks that the task of info ended Failed after want runs of
// its function, with an output holding each of texts, and none of its
// writes committed.
func (e *env[Tx]) wantEnded(info taskapi.Info, runs, want int32, texts ...string) {
	e.t.Helper()
	if info.State != taskapi.Failed {
		e.t.Errorf("the task ended %v with %q, want FAILED", info.State, info.Output)
	}
	if runs != want {
		e.t.Errorf("the function ran %d times, want %d", runs, want)
	}
	for _, text := range texts {
		if !strings.Contains(info.Output, text) {
			e.t.Errorf("the task's output %q does not say %q", info.Output, text)
		}
	}
	if n := e.effectRows(info.Task); n != 0 {
		e.t.Errorf("the task has %d effect rows, want 0: a run that failed committed", n)
	}
}
