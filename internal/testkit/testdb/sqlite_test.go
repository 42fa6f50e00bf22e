package testdb_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

// TestSQLiteGivesMigratedIsolatedDatabases checks that two calls of SQLite
// give two separate files, both at the newest migration, so that what one
// test writes another never sees, although both are copies of one file.
func TestSQLiteGivesMigratedIsolatedDatabases(t *testing.T) {
	t.Parallel()
	a, b := testdb.SQLite(t), testdb.SQLite(t)
	provider, err := migrations.NewProvider(a, migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := provider.HasPending(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pending {
		t.Error("the copy has migrations pending")
	}
	if _, err := a.ExecContext(t.Context(), "INSERT INTO task_topic (topic) VALUES ('only-in-a')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRowContext(t.Context(), "SELECT count(*) FROM task_topic WHERE topic = 'only-in-a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("a row written in one database appeared in the other")
	}
}
