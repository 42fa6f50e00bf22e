package integration_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// Sessions that the server ends and servers that do not answer, for
// conformance.Backend.Kill and Unreachable and for the tests of Transact.

// Where nothing listens: port 1 of the loopback interface.
const (
	unreachablePostgres = "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"
	unreachableMySQL    = "nobody@tcp(127.0.0.1:1)/none?timeout=5s"
)

// endSession ends a session from another and returns once the server has
// ended it: id reads the session's id on the session itself, kill ends
// it, alive counts the sessions of an id.
func endSession(t *testing.T, id func() (int64, error), kill func(id int64) error, alive func(id int64) (int, error)) {
	t.Helper()
	session, err := id()
	if err != nil {
		t.Fatalf("read the session's id: %v", err)
	}
	if err := kill(session); err != nil {
		t.Fatalf("end session %d: %v", session, err)
	}
	if err := awaitSessionEnd(session, alive); err != nil {
		t.Fatal(err)
	}
}

// awaitSessionEnd returns once alive counts no session of id, or an error
// when it cannot tell or the session still runs a minute later. It fails
// no test itself, for the transaction functions of the tests: one whose
// goroutine exits (t.FailNow) leaves taskansi.Transact waiting for its
// transaction for ever.
func awaitSessionEnd(id int64, alive func(id int64) (int, error)) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		n, err := alive(id)
		if err != nil {
			return fmt.Errorf("look for session %d: %w", id, err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %d still runs a minute after it was ended", id)
		}
	}
}

// pgKill ends the session of tx, a transaction of taskpg, from db.
func pgKill(t *testing.T, db, tx taskpg.DB) {
	t.Helper()
	ctx := t.Context()
	endSession(t,
		func() (id int64, err error) {
			err = tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&id)
			return id, err
		},
		func(id int64) error {
			_, err := db.Exec(ctx, "SELECT pg_terminate_backend($1::integer)", id)
			return err
		},
		func(id int64) (n int, err error) {
			err = db.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer", id).Scan(&n)
			return n, err
		})
}

// pgUnreachable returns a pool on a server that does not answer.
func pgUnreachable(t *testing.T) taskpg.DB {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), unreachablePostgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// ansiKill returns the Backend.Kill of taskansi on server s.
func (s transactServer) ansiKill(t *testing.T, db, tx taskansi.DB) {
	t.Helper()
	s.terminate(t, db.(*sql.DB), tx)
}

// ansiUnreachable returns a Backend.Unreachable of taskansi: a *sql.DB of
// driver on dsn, where nothing answers.
func ansiUnreachable(driver, dsn string) func(t *testing.T) taskansi.DB {
	return func(t *testing.T) taskansi.DB {
		t.Helper()
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
}
