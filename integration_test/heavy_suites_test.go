//go:build heavy

package integration_test

import (
	"database/sql"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// Six of the seven suites are heavy tests (built with the tag heavy, run
// by CI's step heavy without -race): with more than taskpg's plain suite,
// the test command took longer than its ten minutes on a busy machine
// (21 minutes with the suites on SQLite and MySQL, whose cases wait on
// row locks and, on SQLite, run its engine under the detector). The race
// detector watches taskansi's Go code under its own tests, taskproc's cuts
// of settlement on MySQL and the taskansi tests of this package; each
// suite here is a variant of statements or of connections over that code.

// TestTaskansiSQLiteConformance runs the suite on taskansi's SQLite
// dialect, a single writer.
func TestTaskansiSQLiteConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := ansiBackend(taskansi.SQLite, func(t *testing.T) *sql.DB { return testdb.SQLite(t) })
	b.SingleWriter = true
	b.Block = sqliteBlock.ansi
	conformance.Run(t, b)
}

// TestTaskansiMySQLConformance runs the suite on taskansi's MySQL dialect
// (MariaDB).
func TestTaskansiMySQLConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := ansiBackend(taskansi.MySQL, func(t *testing.T) *sql.DB { return testdb.MySQL(t) })
	b.Block = mysqlBlock.ansi
	b.Kill, b.Unreachable = transactServers["MySQL"].ansiKill, ansiUnreachable("mysql", unreachableMySQL)
	conformance.Run(t, b)
}

// TestTaskpgExclusiveConformance runs the suite on taskpg WithExclusive,
// whose polls wait for locked rows instead of skipping them.
func TestTaskpgExclusiveConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := pgBackend(taskpg.WithExclusive())
	b.Exclusive = true
	conformance.Run(t, b)
}

// TestTaskansiPostgresConformance runs the suite on taskansi's PostgreSQL
// dialect.
func TestTaskansiPostgresConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := ansiBackend(taskansi.Postgres, openPostgres)
	b.Bounds, b.SharedAdmission, b.Block = true, true, postgresBlock.ansi
	b.Kill, b.Unreachable = transactServers["Postgres"].ansiKill, ansiUnreachable("pgx", unreachablePostgres)
	conformance.Run(t, b)
}

// TestTaskpgConformanceThroughPgBouncer runs the suite on taskpg through a
// PgBouncer in transaction pooling mode, pgx in its exec mode (issue 26):
// every round trip may go to another server connection, and no statement
// prepared by name outlives its transaction.
func TestTaskpgConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := pgBackend()
	b.Open = func(t *testing.T) taskpg.DB {
		return testdb.Pool(t, testdb.PgBouncerURL(t, testdb.PostgresURL(t)), 16)
	}
	conformance.Run(t, b)
}

// TestTaskansiPostgresConformanceThroughPgBouncer runs the suite on
// taskansi's PostgreSQL dialect through a PgBouncer in transaction pooling
// mode, database/sql over pgx in its exec mode (issue 26).
func TestTaskansiPostgresConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := ansiBackend(taskansi.Postgres, func(t *testing.T) *sql.DB {
		db, err := sql.Open("pgx", testdb.PgBouncerURL(t, testdb.PostgresURL(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
	b.Bounds, b.SharedAdmission, b.Block = true, true, postgresBlock.ansi
	b.Kill, b.Unreachable = transactServers["Postgres"].ansiKill, ansiUnreachable("pgx", unreachablePostgres)
	conformance.Run(t, b)
}
