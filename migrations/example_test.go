package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/taskrepo/taskrepo/migrations"
)

// Up brings a database to taskrepo's latest schema at start-up; on an
// up-to-date database it does nothing. Its versions go to VersionTable,
// apart from an application's own goose migrations.
func ExampleUp() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "migrations-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tasks.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for range 2 { // the second run finds nothing to do
		if err := migrations.Up(ctx, db, migrations.SQLite); err != nil {
			log.Fatal(err)
		}
	}
	provider, err := migrations.NewProvider(db, migrations.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	pending, err := provider.HasPending(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = ?", migrations.VersionTable).Scan(&tables); err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending:", pending, "version table:", tables == 1)
	// Output:
	// pending: false version table: true
}
