package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// transactServer is a database server on which taskansi.Transact is tested:
// how to open a fresh database, and the SQL of the caller's own that
// fails in the ways a transaction function must report.
type transactServer struct {
	open func(t *testing.T) *sql.DB
	// table creates the caller's own table "mine" (id, the primary key);
	// mine names it in the statements.
	table, mine string
	// session returns the id of the session of a transaction; kill ends
	// a session from another, and alive tells whether it still runs.
	session, alive string
	kill           func(ctx context.Context, db *sql.DB, id int64) error
	// lockWait, run in a transaction, waits for a lock on mine that
	// another holds, and gives up at once or within a second.
	lockWait []string
	// lockCode tells the failure of lockWait, the SQLSTATE or the number.
	lockCode string
	// sleep is a statement that runs for twice transactBound.
	sleep string
}

var transactServers = map[string]transactServer{
	"Postgres": {
		open:    openPostgres,
		table:   "CREATE TABLE public.mine (id integer PRIMARY KEY)",
		mine:    "public.mine",
		session: "SELECT pg_backend_pid()",
		kill: func(ctx context.Context, db *sql.DB, id int64) error {
			_, err := db.ExecContext(ctx, "SELECT pg_terminate_backend($1)", id)
			return err
		},
		alive:    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
		lockWait: []string{"LOCK TABLE public.mine IN EXCLUSIVE MODE NOWAIT"},
		lockCode: "55P03",
		sleep:    fmt.Sprintf("SELECT pg_sleep(%v)", (2 * transactBound).Seconds()),
	},
	"MySQL": {
		open:    func(t *testing.T) *sql.DB { return testdb.MySQL(t) },
		table:   "CREATE TABLE mine (id integer PRIMARY KEY)",
		mine:    "mine",
		session: "SELECT CONNECTION_ID()",
		kill: func(ctx context.Context, db *sql.DB, id int64) error {
			// KILL takes no placeholder; id is a number the server gave.
			_, err := db.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
			return err
		},
		alive:    "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = ?",
		lockWait: []string{"SET SESSION innodb_lock_wait_timeout = 1", "SELECT id FROM mine WHERE id = 2 FOR UPDATE"},
		lockCode: "1205",
		sleep:    fmt.Sprintf("SELECT SLEEP(%v)", (2 * transactBound).Seconds()),
	},
}

// transactSentinels are the errors of taskapi that a transaction function
// may add.
var transactSentinels = []error{
	taskapi.ErrUnknownTopic, taskapi.ErrUnknownOwner, taskapi.ErrNotActive, taskapi.ErrStateMismatch,
	taskapi.ErrInvalidArgument, taskapi.ErrConflict, taskapi.ErrUnavailable,
}

// wantOnlySentinels fails t unless err holds the sentinels of taskapi in
// want and no other.
func wantOnlySentinels(t *testing.T, what string, err error, want ...error) {
	t.Helper()
	for _, s := range transactSentinels {
		if held, wanted := errors.Is(err, s), errors.Is(errors.Join(want...), s); held != wanted {
			t.Errorf("%s: error %v holds %v: %v, want %v", what, err, s, held, wanted)
		}
	}
}

// errMine is the error of a transaction's function of the caller's own.
var errMine = errors.New("the function's own failure")

// TestTaskansiTransactReportsABrokenConnectionAsUnavailable ends the
// session of a transaction while its function runs (pg_terminate_backend,
// KILL) and checks that taskansi.Transact reports the function's error as
// taskapi.ErrUnavailable, whether the function's statement, the rollback or
// the commit met the broken connection.
func TestTaskansiTransactReportsABrokenConnectionAsUnavailable(t *testing.T) {
	t.Parallel()
	for name, s := range transactServers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), s.open(t)
			transact := taskansi.Transact(db, nil)

			err := transact(ctx, func(tx taskansi.DB) error {
				s.terminate(t, db, tx)
				_, err := tx.ExecContext(ctx, "SELECT 1")
				return fmt.Errorf("%w: %w", errMine, err)
			})
			if !errors.Is(err, errMine) {
				t.Errorf("a statement on a killed session: error %v, want the function's error in the chain", err)
			}
			wantOnlySentinels(t, "a statement on a killed session", err, taskapi.ErrUnavailable)

			err = transact(ctx, func(tx taskansi.DB) error {
				s.terminate(t, db, tx)
				return errMine
			})
			if !errors.Is(err, errMine) {
				t.Errorf("a rollback on a killed session: error %v, want the function's error in the chain", err)
			}
			wantOnlySentinels(t, "a rollback on a killed session", err, taskapi.ErrUnavailable)

			err = transact(ctx, func(tx taskansi.DB) error {
				s.terminate(t, db, tx)
				return nil
			})
			wantOnlySentinels(t, "a commit on a killed session", err, taskapi.ErrUnavailable)

			if err := transact(ctx, func(tx taskansi.DB) error { _, err := tx.ExecContext(ctx, "SELECT 1"); return err }); err != nil {
				t.Errorf("a transaction after the killed ones: %v", err)
			}
		})
	}
}

// TestTaskansiTransactKeepsTheCallersErrors checks that the errors of a
// transaction's function stay as they were, with no sentinel of taskapi,
// unless they are a conflict: a unique violation on the caller's own table
// is the caller's business, a lock wait that gave up asks for the
// transaction to run again.
func TestTaskansiTransactKeepsTheCallersErrors(t *testing.T) {
	t.Parallel()
	for name, s := range transactServers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), s.open(t)
			transact := taskansi.Transact(db, nil)
			if _, err := db.ExecContext(ctx, s.table); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO "+s.mine+" (id) VALUES (2)"); err != nil {
				t.Fatal(err)
			}

			err := transact(ctx, func(taskansi.DB) error { return fmt.Errorf("handler: %w", taskapi.ErrNotActive) })
			wantOnlySentinels(t, "a plain error with a sentinel of the caller's", err, taskapi.ErrNotActive)
			if err := transact(ctx, func(taskansi.DB) error { return errMine }); err != errMine {
				t.Errorf("a plain error: %v, want it as it was", err)
			}

			err = transact(ctx, func(tx taskansi.DB) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO "+s.mine+" (id) VALUES (1), (1)")
				return err
			})
			if err == nil {
				t.Fatal("a unique violation succeeded")
			}
			wantOnlySentinels(t, "a unique violation", err)

			holder, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback()
			if _, err := holder.ExecContext(ctx, "UPDATE "+s.mine+" SET id = 2 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			err = transact(ctx, func(tx taskansi.DB) error {
				for _, statement := range s.lockWait {
					if _, err := tx.ExecContext(ctx, statement); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil || !hasCode(err, s.lockCode) {
				t.Errorf("a lock wait given up: error %v, want %s in the chain", err, s.lockCode)
			}
			wantOnlySentinels(t, "a lock wait given up", err, taskapi.ErrConflict)
		})
	}
}

// TestTaskansiTransactOfAnUnreachableDatabase checks that a begin that
// cannot reach the server is taskapi.ErrUnavailable.
func TestTaskansiTransactOfAnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	for driver, dsn := range map[string]string{"pgx": unreachablePostgres, "mysql": unreachableMySQL} {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = taskansi.Transact(db, nil)(t.Context(), func(taskansi.DB) error {
			t.Errorf("%s: fn ran without a transaction", driver)
			return nil
		})
		wantOnlySentinels(t, driver+": a begin on an unreachable server", err, taskapi.ErrUnavailable)
	}
}

// terminate ends the session of tx from another connection of db, and
// returns once the server has ended it.
func (s transactServer) terminate(t *testing.T, db *sql.DB, tx taskansi.DB) {
	t.Helper()
	ctx := t.Context()
	endSession(t,
		func() (id int64, err error) { err = tx.QueryRowContext(ctx, s.session).Scan(&id); return id, err },
		func(id int64) error { return s.kill(ctx, db, id) },
		func(id int64) (n int, err error) { err = db.QueryRowContext(ctx, s.alive, id).Scan(&n); return n, err })
}

// awaitServerEnd returns once the server has ended the session of tx, as
// db sees from another session, or the error that kept it from seeing so
// (see awaitSessionEnd): nothing else ends the session (the server ends
// one that idles).
func (s transactServer) awaitServerEnd(ctx context.Context, db *sql.DB, tx taskansi.DB) error {
	var id int64
	if err := tx.QueryRowContext(ctx, s.session).Scan(&id); err != nil {
		return fmt.Errorf("read the session's id: %w", err)
	}
	return awaitSessionEnd(id, func(id int64) (n int, err error) { err = db.QueryRowContext(ctx, s.alive, id).Scan(&n); return n, err })
}

// hasCode reports whether err holds a database error with code: a
// SQLSTATE, or a MySQL error number.
func hasCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	return errors.As(err, &pgErr) && pgErr.Code == code || errors.As(err, &myErr) && fmt.Sprint(myErr.Number) == code
}

// transactBound is the bound of the transactions of the tests of
// taskapi.Bounded: far longer than a round trip, also on a busy machine,
// and short enough to wait for.
const transactBound = 300 * time.Millisecond

// transactOpens returns how to open a fresh database on each server on
// which taskansi.Transact's answers about its pool and its bounds are
// tested: those of transactServers, and SQLite.
func transactOpens() map[string]func(t *testing.T) *sql.DB {
	opens := map[string]func(t *testing.T) *sql.DB{"SQLite": func(t *testing.T) *sql.DB { return testdb.SQLite(t) }}
	for name, s := range transactServers {
		opens[name] = s.open
	}
	return opens
}

// holdConns takes n connections of db and holds them until t ends.
func holdConns(t *testing.T, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	held := make([]*sql.Conn, n)
	for i := range held {
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		held[i] = conn
	}
	return held
}

// TestTaskansiTransactAnswersPoolSize checks that taskansi.Transact answers
// taskapi.PoolSize with the limit that SetMaxOpenConns gave its handle, 0
// without a limit, at once: also while every connection is in use, without
// waiting for one.
func TestTaskansiTransactAnswersPoolSize(t *testing.T) {
	t.Parallel()
	for name, open := range transactOpens() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			transact := taskansi.Transact(db, nil)
			if got, want := taskapi.PoolSize(t.Context(), transact), db.Stats().MaxOpenConnections; got != want {
				t.Errorf("PoolSize of a handle as opened = %d, want its MaxOpenConnections, %d", got, want)
			}
			db.SetMaxOpenConns(0)
			if got := taskapi.PoolSize(t.Context(), transact); got != 0 {
				t.Errorf("PoolSize without a limit = %d, want 0", got)
			}
			db.SetMaxOpenConns(2)
			holdConns(t, db, 2)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a wait for a connection ends here
			defer cancel()
			if got := taskapi.PoolSize(ctx, transact); got != 2 {
				t.Errorf("PoolSize of a handle of 2 connections, both in use = %d, want 2", got)
			}
		})
	}
}

// TestTaskansiTransactOfABoundedContext checks that a transaction that
// taskansi.Transact begins on PostgreSQL on a context marked
// taskapi.Bounded is bounded on the server (see wantBounded), and that the
// same statement and idling pass on an unmarked context; on MySQL and
// SQLite the mark is ignored and they pass under it too.
func TestTaskansiTransactOfABoundedContext(t *testing.T) {
	t.Parallel()
	for name, open := range transactOpens() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			s := transactServers[name] // none for SQLite, which has no statement that sleeps
			transact := taskansi.Transact(db, nil)
			if name != "Postgres" {
				wantUnbounded(t, taskapi.Bounded(t.Context(), transactBound), transact, s.sleep)
				return
			}
			wantBounded(t, s, db, transact)
			wantUnbounded(t, t.Context(), transact, s.sleep)
		})
	}
}

// wantBounded checks that transact, on db of PostgreSQL server s, bounds on
// the server a transaction begun on a context marked taskapi.Bounded. A
// statement of the function's own longer than the bound is stopped
// (SQLSTATE 57014), which Transact leaves the caller's failure, with no
// sentinel, as its documentation says. A function that idles longer than
// the bound finds its session ended by the server (25P03),
// taskapi.ErrUnavailable.
func wantBounded(t *testing.T, s transactServer, db *sql.DB, transact func(ctx context.Context, fn func(tx taskansi.DB) error) error) {
	t.Helper()
	ctx := t.Context()
	bounded := taskapi.Bounded(ctx, transactBound)
	err := transact(bounded, func(tx taskansi.DB) error { _, err := tx.ExecContext(ctx, s.sleep); return err })
	if !hasCode(err, "57014") {
		t.Errorf("a statement longer than the bound: error %v, want SQLSTATE 57014 in the chain", err)
	}
	wantOnlySentinels(t, "a statement longer than the bound", err)
	err = transact(bounded, func(tx taskansi.DB) error {
		if err := s.awaitServerEnd(ctx, db, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	})
	wantRefused("25P03")(t, "a statement after idling longer than the bound", err)
}

// wantUnbounded fails t unless transact, on ctx, runs a function whose
// statement sleep (none when empty) runs for twice transactBound and which
// then idles as long before its next statement: no bound applies.
func wantUnbounded(t *testing.T, ctx context.Context, transact func(ctx context.Context, fn func(tx taskansi.DB) error) error, sleep string) {
	t.Helper()
	err := transact(ctx, func(tx taskansi.DB) error {
		if sleep != "" {
			if _, err := tx.ExecContext(ctx, sleep); err != nil {
				return err
			}
		}
		time.Sleep(2 * transactBound)
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	})
	if err != nil {
		t.Errorf("a long statement and idling without a bound: %v", err)
	}
}

// TestTaskansiTransactSaysThePoolIsExhausted holds both connections of a
// handle limited to two (SetMaxOpenConns) and checks that
// taskansi.Transact, whose context ends while it waits for a connection,
// says that the pool was exhausted, with its size, and keeps the
// context's error; a context that ended while a connection was free says
// nothing of the kind.
func TestTaskansiTransactSaysThePoolIsExhausted(t *testing.T) {
	t.Parallel()
	for name, open := range transactOpens() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), open(t)
			db.SetMaxOpenConns(2)
			held := holdConns(t, db, 2)
			fn := func(taskansi.DB) error { t.Error("fn ran without a connection of its own"); return nil }
			wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			const want = "pool exhausted: all 2 connections of the pool were in use"
			if err := taskansi.Transact(db, nil)(wait, fn); !strings.Contains(fmt.Sprint(err), want) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a begin on an exhausted pool: error %v, want %q and %v", err, want, context.DeadlineExceeded)
			}
			held[0].Close()
			cancelled, stop := context.WithCancel(ctx)
			stop()
			if err := taskansi.Transact(db, nil)(cancelled, fn); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "pool exhausted") {
				t.Errorf("a begin with a cancelled context and a free connection: error %v, want %v and no word of an exhausted pool", err, context.Canceled)
			}
		})
	}
}

// TestTaskansiTransactRollsBackAFunctionThatEndsItsGoroutine runs a
// transaction whose function ends its goroutine (runtime.Goexit, as a
// test's FailNow does) after a write: the transaction is rolled back and
// its connection given back, so that the write is gone and the handle's
// connections are free again.
func TestTaskansiTransactRollsBackAFunctionThatEndsItsGoroutine(t *testing.T) {
	t.Parallel()
	for name, open := range transactOpens() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), open(t)
			db.SetMaxOpenConns(2)
			if _, err := db.ExecContext(ctx, "CREATE TABLE mine (id int)"); err != nil {
				t.Fatal(err)
			}
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				_ = taskansi.Transact(db, nil)(ctx, func(tx taskansi.DB) error {
					if _, err := tx.ExecContext(ctx, "INSERT INTO mine VALUES (1)"); err != nil {
						return err
					}
					runtime.Goexit()
					return nil
				})
			}()
			<-ended
			deadline := time.Now().Add(time.Minute)
			for db.Stats().InUse > 0 {
				if time.Now().After(deadline) {
					t.Fatal("the connection of the transaction was never given back")
				}
				time.Sleep(10 * time.Millisecond)
			}
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM mine").Scan(&n); err != nil || n != 0 {
				t.Errorf("the function's write: %d rows (%v), want none", n, err)
			}
		})
	}
}
