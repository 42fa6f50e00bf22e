package migrations_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestUpIsIdempotentAndResetDropsEverything(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t) // already migrated once by testdb
	if err := migrations.Up(ctx, db, migrations.Postgres); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if err := migrations.Reset(ctx, db, migrations.Postgres); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if n := countTables(t, db); n != 0 {
		t.Fatalf("after Reset %d task tables remain", n)
	}
	if err := migrations.Up(ctx, db, migrations.Postgres); err != nil {
		t.Fatalf("Up after Reset: %v", err)
	}
	if n := countTables(t, db); n != 4 {
		t.Fatalf("after Up %d of 4 task tables exist", n)
	}
}

func countTables(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_catalog.pg_tables
		WHERE schemaname = 'public' AND tablename IN ('task', 'task_topic', 'task_owner', 'task_schedule')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpConcurrentlyFromTwoProcessesDoesNotCollide(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	ctx := t.Context()
	db := open(t)
	if err := migrations.Reset(ctx, db, migrations.Postgres); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			other, err := sql.Open("pgx", url)
			if err == nil {
				err = migrations.Up(context.WithoutCancel(ctx), other, migrations.Postgres)
				other.Close()
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Up: %v", err)
		}
	}
}

func TestTopicRowsOwnTheirPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t)
	topic := "a topic with spaces, quotes ' \" and a very long name " + "ünïcödé"
	exec := func(query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	}
	if err := exec("INSERT INTO task_topic (topic) VALUES ($1)", topic); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO task (topic, identifier) VALUES ($1, 'x')", topic); err != nil {
		t.Fatalf("insert into the new partition: %v", err)
	}
	if err := exec("INSERT INTO task (topic, identifier) VALUES ('unknown', 'x')"); err == nil {
		t.Fatal("insert into a topic without partition succeeded")
	}
	if got := partitions(t, db); got != 1 {
		t.Fatalf("%d partitions, want 1", got)
	}
	// Deleting the topic empties its partition, which then refuses rows
	// (dropping it would lock the whole task table); the topic gets it back.
	if err := exec("DELETE FROM task_topic WHERE topic = $1", topic); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO task (topic, identifier) VALUES ($1, 'y')", topic); err == nil {
		t.Fatal("insert into a deleted topic succeeded")
	}
	if err := exec("INSERT INTO task_topic (topic) VALUES ($1)", topic); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO task (topic, identifier) VALUES ($1, 'z')", topic); err != nil {
		t.Fatalf("insert into the topic registered again: %v", err)
	}
	var identifiers string
	if err := db.QueryRowContext(ctx, "SELECT string_agg(identifier, ',') FROM task WHERE topic = $1", topic).Scan(&identifiers); err != nil || identifiers != "z" {
		t.Errorf("tasks of the topic registered again: %q, %v; want only z", identifiers, err)
	}
	if got := partitions(t, db); got != 1 {
		t.Fatalf("%d partitions after the topic came back, want 1", got)
	}
}

func partitions(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_catalog.pg_inherits WHERE inhparent = 'public.task'::regclass").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPrettyViewNamesEveryState(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t)
	if _, err := db.ExecContext(ctx, "INSERT INTO task_topic (topic) VALUES ('t')"); err != nil {
		t.Fatal(err)
	}
	names := []string{"ACTIVE", "READY", "EXPIRED", "FAILED", "SUSPENDED", "FILTERED", "SUCCEEDED", "RECREATED", "REDUNDANT", "CANCELLED"}
	for ordinal := range names {
		if _, err := db.ExecContext(ctx, "INSERT INTO task (topic, identifier, state, descent) VALUES ('t', 'x', $1, $2)", ordinal, min(ordinal, 8)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.QueryContext(ctx, "SELECT state, descent FROM task_pretty ORDER BY sequence")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		var state, descent string
		if err := rows.Scan(&state, &descent); err != nil {
			t.Fatal(err)
		}
		// A descent is never CANCELLED: a cancelled task is never revived.
		if state != names[i] || descent != names[min(i, 8)] {
			t.Errorf("ordinal %d shows as %s/%s, want %s/%s", i, state, descent, names[i], names[min(i, 8)])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
