//go:build heavy

package integration_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// Two of the five suites are heavy tests (built with the tag heavy, run by
// CI's step heavy without -race): with all five, the test command took
// longer than its ten minutes on a busy machine. Each is a variant of
// statements over Go code that the race detector already watches under a
// suite of the test command: taskpg's plain suite, and taskansi's on
// SQLite and MySQL.

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
	b.Block = postgresBlock.ansi
	b.Kill, b.Unreachable = transactServers["Postgres"].ansiKill, ansiUnreachable("pgx", unreachablePostgres)
	conformance.Run(t, b)
}
