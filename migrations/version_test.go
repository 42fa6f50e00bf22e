package migrations_test

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

// emptyDatabases opens a database without taskrepo's tables on each dialect.
var emptyDatabases = map[migrations.Dialect]func(t *testing.T) *sql.DB{
	migrations.Postgres: func(t *testing.T) *sql.DB { return openURL(t, testdb.EmptyPostgresURL(t)) },
	migrations.SQLite: func(t *testing.T) *sql.DB {
		return testdb.OpenSQLite(t, filepath.Join(t.TempDir(), "app.db"), testdb.SQLiteOptions)
	},
	migrations.MySQL: func(t *testing.T) *sql.DB { return testdb.EmptyMySQL(t) },
}

var gooseDialects = map[migrations.Dialect]goose.Dialect{
	migrations.Postgres: goose.DialectPostgres, migrations.SQLite: goose.DialectSQLite3, migrations.MySQL: goose.DialectMySQL,
}

func openURL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// versions lists the applied versions of a goose version table.
func versions(t *testing.T, db *sql.DB, table string) []int64 {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT version_id FROM "+table+" WHERE is_applied ORDER BY version_id")
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	var got []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// ours lists the versions of taskrepo's migrations of dialect.
func ours(t *testing.T, dialect migrations.Dialect) []int64 {
	t.Helper()
	sources, err := fs.Glob(migrations.Files, string(dialect)+"/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	all := []int64{0}
	for _, source := range sources {
		v, err := goose.NumericComponent(source)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, v)
	}
	return all
}

func TestUpBesideTheApplicationsOwnGooseMigrations(t *testing.T) {
	t.Parallel()
	app := fstest.MapFS{
		"00001_orders.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE orders (id INTEGER PRIMARY KEY);\n-- +goose Down\nDROP TABLE orders;\n")},
		"00002_refunds.sql": {Data: []byte("-- +goose Up\nCREATE TABLE refunds (id INTEGER PRIMARY KEY);\n-- +goose Down\nDROP TABLE refunds;\n")},
	}
	for dialect, open := range emptyDatabases {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), open(t)
			p, err := goose.NewProvider(gooseDialects[dialect], db, app)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatalf("the application's Up: %v", err)
			}
			if err := migrations.Up(ctx, db, dialect); err != nil {
				t.Fatalf("taskrepo's Up: %v", err)
			}
			if got, want := versions(t, db, migrations.VersionTable), ours(t, dialect); !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", migrations.VersionTable, got, want)
			}
			if got := versions(t, db, "goose_db_version"); !slices.Equal(got, []int64{0, 1, 2}) {
				t.Errorf("the application's goose_db_version = %v, want it untouched at [0 1 2]", got)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO task_topic (topic) VALUES ('t')"); err != nil {
				t.Errorf("taskrepo's tables are missing: %v", err)
			}
		})
	}
}

// legacyVersions are the migrations that taskrepo recorded in goose's
// default table before it had a table of its own.
var legacyVersions = map[migrations.Dialect]int64{migrations.Postgres: 2, migrations.SQLite: 1, migrations.MySQL: 1}

func TestUpAdoptsADatabaseMigratedIntoGoosesDefaultTable(t *testing.T) {
	t.Parallel()
	for dialect, open := range emptyDatabases {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), open(t)
			var later []int64
			for _, v := range ours(t, dialect) {
				if v > legacyVersions[dialect] {
					later = append(later, v)
				}
			}
			files, err := fs.Sub(migrations.Files, string(dialect))
			if err != nil {
				t.Fatal(err)
			}
			old, err := goose.NewProvider(gooseDialects[dialect], db, files, goose.WithExcludeVersions(later))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.Up(ctx); err != nil {
				t.Fatalf("the earlier taskrepo's Up: %v", err)
			}
			for _, s := range []string{
				`INSERT INTO task_topic (topic) VALUES ('kept')`,
				`INSERT INTO task (topic, identifier) VALUES ('kept', 'x')`,
			} {
				if _, err := db.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			for range 2 { // adopting twice adopts once
				if err := migrations.Up(ctx, db, dialect); err != nil {
					t.Fatalf("Up over the earlier schema: %v", err)
				}
			}
			if got, want := versions(t, db, migrations.VersionTable), ours(t, dialect); !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", migrations.VersionTable, got, want)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM task WHERE topic = 'kept'`).Scan(&n); err != nil || n != 1 {
				t.Errorf("tasks of the earlier schema: %d, %v; want the one task kept", n, err)
			}
		})
	}
}
