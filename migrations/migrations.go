// Package migrations holds the database schema of taskrepo as goose
// migrations, one folder per SQL dialect, embedded in the binary.
//
// Up brings a database to the latest schema. taskrepo records its migrations
// in a version table of its own, VersionTable, so that they never mix with
// an application's own goose migrations in goose's default table. A database
// migrated by an earlier taskrepo, whose versions went to goose's default
// table, is adopted: Up finds which of taskrepo's migrations its schema
// already has and records them in VersionTable before it applies the rest.
// goose's default table is left as it is (it may hold the application's
// versions too).
//
// On PostgreSQL and MySQL, Up runs through goose's Provider with a session
// lock, so that several processes migrating the same database at start-up do
// not collide: goose's advisory lock on PostgreSQL, a GET_LOCK named lock of
// this package on MySQL (goose v3.29 offers MySQL only a table-based lock
// with leases). SQLite gets no session lock: an embedded database file has
// one writer at a time, which serializes the migrations' transactions, and
// goose has no SQLite locker. Processes that start Up on one SQLite file at
// the very same moment may see the later one fail on a table that the
// earlier one created; run Up from one process (the usual case for an
// embedded database) or retry it.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Dialect names the SQL dialect of a database.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
	MySQL    Dialect = "mysql" // MySQL 8 and MariaDB 10.6 or newer
)

// VersionTable is the table in which taskrepo records the migrations it
// applied, apart from goose's default goose_db_version.
const VersionTable = "taskrepo_db_version"

// Files holds the migrations, one folder per dialect.
//
//go:embed postgres/*.sql sqlite/*.sql mysql/*.sql
var Files embed.FS

// Up applies every migration of dialect that db does not have yet. Running it
// on an up-to-date database does nothing.
func Up(ctx context.Context, db *sql.DB, dialect Dialect) error {
	s, err := newSetup(dialect)
	if err != nil {
		return err
	}
	if err := s.adopt(ctx, db); err != nil {
		return fmt.Errorf("migrations: adopt %s: %w", dialect, err)
	}
	p, err := s.provider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: up %s: %w", dialect, err)
	}
	return nil
}

// Reset rolls back every migration of dialect, dropping taskrepo's tables.
func Reset(ctx context.Context, db *sql.DB, dialect Dialect) error {
	p, err := NewProvider(db, dialect)
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		return fmt.Errorf("migrations: reset %s: %w", dialect, err)
	}
	return nil
}

// NewProvider returns a goose provider for the migrations of dialect on db,
// recording them in VersionTable, for callers that want goose's finer
// control (status, one step at a time). Unlike Up, it does not adopt a
// database that an earlier taskrepo migrated into goose's default table.
func NewProvider(db *sql.DB, dialect Dialect, opts ...goose.ProviderOption) (*goose.Provider, error) {
	s, err := newSetup(dialect)
	if err != nil {
		return nil, err
	}
	return s.provider(db, opts...)
}

// setup is what the migrations of one dialect need: goose's name of the
// dialect, its session locker (none for SQLite) and the migration files.
type setup struct {
	dialect Dialect
	goose   goose.Dialect
	locker  lock.SessionLocker
	files   fs.FS
}

func newSetup(dialect Dialect) (*setup, error) {
	s := &setup{dialect: dialect}
	var err error
	switch dialect {
	case Postgres:
		s.goose = goose.DialectPostgres
		s.locker, err = lock.NewPostgresSessionLocker()
	case SQLite:
		s.goose = goose.DialectSQLite3
	case MySQL:
		s.goose, s.locker = goose.DialectMySQL, mysqlLocker{}
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	if err != nil {
		return nil, fmt.Errorf("migrations: %s session locker: %w", dialect, err)
	}
	if s.files, err = fs.Sub(Files, string(dialect)); err != nil {
		return nil, fmt.Errorf("migrations: %s files: %w", dialect, err)
	}
	return s, nil
}

// provider returns the goose provider of s on db; opts come after taskrepo's
// own options.
func (s *setup) provider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	own := []goose.ProviderOption{goose.WithTableName(VersionTable)}
	if s.locker != nil {
		own = append(own, goose.WithSessionLocker(s.locker))
	}
	p, err := goose.NewProvider(s.goose, db, s.files, append(own, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %s provider: %w", s.dialect, err)
	}
	return p, nil
}
