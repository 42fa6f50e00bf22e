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

func TestTaskpgConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	conformance.Run(t, pgBackend())
}
