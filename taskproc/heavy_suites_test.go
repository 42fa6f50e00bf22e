//go:build heavy

package taskproc_test

import (
	"database/sql"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// TestTaskansiSQLite and TestTaskansiMySQL run the suite on taskansi: heavy
// tests (CI's step heavy, without -race), which took 184 s and 130 s of
// the test command on a busy machine (SQLite's driver is Go: the race
// detector instruments its engine). The detector watches taskansi's code
// under the cuts of settlement on MySQL (cut_test.go) and integration_test's
// taskansi tests.
func TestTaskansiSQLite(t *testing.T) {
	suite(t, ansiBackend(taskansi.SQLite, nil, func(t testing.TB) *sql.DB {
		db := testdb.SQLite(t)
		db.SetMaxOpenConns(1) // README, "SQLite": writers queue in the pool, in turn
		return db
	}))
}

// TestTaskpgThroughPgBouncer runs the suite on taskpg through a PgBouncer
// in transaction pooling mode, pgx in its exec mode (issue 26): a heavy
// test (CI's step heavy), the suite on taskpg being in the test command.
func TestTaskpgThroughPgBouncer(t *testing.T) {
	b := pgBackend
	b.open = func(t *testing.T) taskpg.DB {
		return testdb.Pool(t, testdb.PgBouncerURL(t, testdb.PostgresURL(t)), 16)
	}
	suite(t, b)
}

// TestSettlementSurvivesACutAtEveryStatementOnTaskansiPostgres cuts
// settlement on taskansi's PostgreSQL dialect: a heavy test, the same Go
// code as on MySQL with other statements.
func TestSettlementSurvivesACutAtEveryStatementOnTaskansiPostgres(t *testing.T) {
	cutPaths(t, ansiPostgresCutRig(t))
}

func TestTaskansiMySQL(t *testing.T) {
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	suite(t, ansiBackend(taskansi.MySQL, readCommitted, func(t testing.TB) *sql.DB { return testdb.MySQL(t) }))
}
