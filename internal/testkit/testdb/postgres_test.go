package testdb_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// TestPostgresGivesMigratedIsolatedDatabases checks that two calls of
// Postgres give two different databases, migrated, with an empty
// search_path: on the shared server, which without a URL is testdb's own.
func TestPostgresGivesMigratedIsolatedDatabases(t *testing.T) {
	t.Parallel()
	a, b := testdb.Postgres(t), testdb.Postgres(t)
	var nameA, nameB, path string
	if err := a.QueryRow(t.Context(), "SELECT current_database(), current_setting('search_path')").Scan(&nameA, &path); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(t.Context(), "SELECT current_database()").Scan(&nameB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB {
		t.Errorf("both tests got database %q", nameA)
	}
	if path != "" && path != `""` {
		t.Errorf("search_path = %q, want empty", path)
	}
	var tables int
	err := a.QueryRow(t.Context(), `SELECT count(*) FROM pg_catalog.pg_tables
		WHERE schemaname = 'public' AND tablename IN ('task', 'task_topic', 'task_owner')`).Scan(&tables)
	if err != nil {
		t.Fatal(err)
	}
	if tables != 3 {
		t.Errorf("found %d of the 3 tables", tables)
	}
	if _, err := a.Exec(t.Context(), "SELECT count(*) FROM task"); err == nil {
		t.Error("an unqualified table name resolved despite the empty search_path")
	}
}
