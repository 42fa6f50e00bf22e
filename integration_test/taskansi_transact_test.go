package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

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

// hasCode reports whether err holds a database error with code: a
// SQLSTATE, or a MySQL error number.
func hasCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	return errors.As(err, &pgErr) && pgErr.Code == code || errors.As(err, &myErr) && fmt.Sprint(myErr.Number) == code
}
