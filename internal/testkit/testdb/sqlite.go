package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
// several processes would. The file is a copy of one that the test process
// migrated once (sqliteImage), as PostgreSQL's databases are copies of a
// template.
func SQLiteFile(t testing.TB) string {
	t.Helper()
	image, err := sqliteImage()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	path := filepath.Join(t.TempDir(), "tasks.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return path
}

// sqliteImage returns the bytes of the migrated database file that every
// SQLite database of the test process starts as, migrated once. Migrating
// took about 300 ms under the race detector (SQLite's driver is Go, and the
// detector instruments the engine), for each of hundreds of tests; a copy
// takes well under one.
var sqliteImage = sync.OnceValues(migratedSQLite)

// migratedSQLite migrates a new database file, in a directory of its own
// that it removes, and returns its bytes. The last connection's close
// checkpoints the write-ahead log into the file and removes the log, so
// that the file alone is the whole database.
func migratedSQLite() ([]byte, error) {
	dir, err := os.MkdirTemp("", "taskrepo-testdb-sqlite-*")
	if err != nil {
		return nil, fmt.Errorf("migrate a SQLite template: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tasks.db")
	db, err := sql.Open("sqlite", "file:"+path+"?"+SQLiteOptions)
	if err != nil {
		return nil, fmt.Errorf("migrate a SQLite template: %w", err)
	}
	err = migrations.Up(context.Background(), db, migrations.SQLite)
	if cErr := db.Close(); err == nil {
		err = cErr
	}
	if err != nil {
		return nil, fmt.Errorf("migrate a SQLite template: %w", err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("migrate a SQLite template: its write-ahead log outlived the last connection")
	}
	return os.ReadFile(path)
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
