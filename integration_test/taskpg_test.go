package integration_test

import (
	"context"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// pgBackend runs taskpg on a fresh PostgreSQL database per test.
func pgBackend(opts ...taskpg.Option) conformance.Backend[taskpg.DB] {
	return conformance.Backend[taskpg.DB]{
		Open: func(t *testing.T) taskpg.DB { return testdb.Postgres(t) },
		New: func(owner string) (taskapi.Repository[taskpg.DB], error) {
			return taskpg.New(owner, opts...)
		},
		Begin: func(ctx context.Context, db taskpg.DB) (taskpg.DB, func(bool) error, error) {
			tx, err := db.Begin(ctx)
			if err != nil {
				return nil, nil, err
			}
			end := func(commit bool) error {
				if commit {
					return tx.Commit(ctx)
				}
				return tx.Rollback(ctx)
			}
			return tx, end, nil
		},
		Bounds:          true,
		SharedAdmission: true,
		Block:           postgresBlock.pg,
		Kill:            pgKill,
		Unreachable:     pgUnreachable,
	}
}

// TestTaskpgConformance runs the suite on taskpg, records every statement
// taskpg sends in it and a Notifier's, and checks docs/distributed.md
// against them (statements_test.go). Every push notifies
// (WithWakeUps(0)): with the default interval, whether a push carries its
// wake-up depends on the time since the last one, and so would the
// statements recorded; the suite's other runs on taskpg keep the default.
func TestTaskpgConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	r := &recorder{seen: map[string]bool{}}
	b := pgBackend(taskpg.WithWakeUps(0))
	b.Open = func(t *testing.T) taskpg.DB { return tracedPool(t, r) }
	conformance.Run(t, b)
	t.Run("Notifier", func(t *testing.T) { listenOnce(t, r, tracedPool(t, r)) })
	wantDistributedTable(t, r)
}

// TestTaskpgPushesFromSQL runs the suite's push cases with every push made
// by the SQL function task_push_many (sqlpush_test.go).
func TestTaskpgPushesFromSQL(t *testing.T) {
	t.Parallel()
	b := pgBackend()
	b.New = func(owner string) (taskapi.Repository[taskpg.DB], error) {
		repo, err := taskpg.New(owner)
		return sqlPusher{repo}, err
	}
	conformance.RunPushes(t, b)
}
