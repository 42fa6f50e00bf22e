package faults

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskpg"
)

// faultTables are the user's tables of the fault tests: orders that
// producers write with their tasks, the effects that consumers write in
// the transactions that complete tasks (with what became of the task, in
// the soak), and the orders whose tasks the soak purged.
var faultTables = []string{
	"CREATE TABLE fault_order (id text PRIMARY KEY)",
	`CREATE TABLE fault_effect (
		id bigserial PRIMARY KEY,
		identifier text NOT NULL, sequence bigint NOT NULL, owner text NOT NULL, result text,
		at timestamp NOT NULL DEFAULT (clock_timestamp() AT TIME ZONE 'utc'))`,
	"CREATE INDEX fault_effect_sequence ON fault_effect (sequence, id)",
	"CREATE INDEX fault_effect_identifier ON fault_effect (identifier)",
	"CREATE TABLE fault_purged (id text PRIMARY KEY)",
}

// openFaultDB opens a pool on the database at url, creates the fault
// tables and topics there, and returns the pool with a repository of the
// test's own owner, registered.
func openFaultDB(t *testing.T, url string, topics ...string) (*pgxpool.Pool, *taskpg.Repository) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, stmt := range faultTables {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	repo := registeredOwner(t, pool, "fault-test")
	for _, topic := range topics {
		if _, err := repo.Initialize(ctx, pool, topic); err != nil {
			t.Fatal(err)
		}
	}
	return pool, repo
}

// registeredOwner returns a repository of owner, registered on pool.
func registeredOwner(t *testing.T, pool *pgxpool.Pool, owner string) *taskpg.Repository {
	t.Helper()
	repo, err := taskpg.New(owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return repo
}
