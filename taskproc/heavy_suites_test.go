//go:build heavy

package taskproc_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskpg"
)

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
