package testdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/taskrepo/taskrepo/migrations"
)

// SQLiteOptions are the connection parameters of the test databases, the ones
// docs/backends.md recommends: wait up to ten seconds for the writer's lock, write-ahead
// logging (readers do not block the writer), and transactions that take the
// write lock when they begin.
const SQLiteOptions = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"

// SQLite returns a handle on a fresh, migrated SQLite database of t's own, in
// a file of t's temporary directory, which is removed when t ends.
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	return OpenSQLite(t, SQLiteFile(t), SQLiteOptions)
}

// SQLiteFile creates a fresh, migrated SQLite database file in t's temporary
// directory and returns its path, for tests that open it several times, as
// several processes would.
func SQLiteFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.db")
	db := OpenSQLite(t, path, SQLiteOptions)
	if err := migrations.Up(context.Background(), db, migrations.SQLite); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return path
}

// OpenSQLite opens the SQLite database file at path with the connection
// parameters options, and closes it when t ends.
func OpenSQLite(t testing.TB, path, options string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+options)
	if err != nil {
		t.Fatalf("testdb: open SQLite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
