// Package migrations holds the database schema of taskrepo as goose
// migrations, one folder per SQL dialect, embedded in the binary.
//
// Up brings a database to the latest schema. On PostgreSQL and MySQL it runs
// through goose's Provider with a session lock, so that several processes
// migrating the same database at start-up do not collide: goose's advisory
// lock on PostgreSQL, a GET_LOCK named lock of this package on MySQL (goose
// v3.29 offers MySQL only a table-based lock with leases). SQLite gets no
// session lock: an embedded database file has one writer at a time, which
// serializes the migrations' transactions, and goose has no SQLite locker.
// Processes that start Up on one SQLite file at the very same moment may see
// the later one fail on a table that the earlier one created; run Up from one
// process (the usual case for an embedded database) or retry it.
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

// Files holds the migrations, one folder per dialect.
//
//go:embed postgres/*.sql sqlite/*.sql mysql/*.sql
var Files embed.FS

// Up applies every migration of dialect that db does not have yet. Running it
// on an up-to-date database does nothing.
func Up(ctx context.Context, db *sql.DB, dialect Dialect) error {
	p, err := NewProvider(db, dialect)
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
// for callers that want goose's finer control (status, one step at a time).
func NewProvider(db *sql.DB, dialect Dialect, opts ...goose.ProviderOption) (*goose.Provider, error) {
	var (
		gooseDialect goose.Dialect
		locker       lock.SessionLocker
		err          error
	)
	switch dialect {
	case Postgres:
		gooseDialect = goose.DialectPostgres
		locker, err = lock.NewPostgresSessionLocker()
	case SQLite:
		gooseDialect = goose.DialectSQLite3
	case MySQL:
		gooseDialect, locker = goose.DialectMySQL, mysqlLocker{}
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	if err != nil {
		return nil, fmt.Errorf("migrations: %s session locker: %w", dialect, err)
	}
	sub, err := fs.Sub(Files, string(dialect))
	if err != nil {
		return nil, fmt.Errorf("migrations: %s files: %w", dialect, err)
	}
	if locker != nil {
		opts = append([]goose.ProviderOption{goose.WithSessionLocker(locker)}, opts...)
	}
	p, err := goose.NewProvider(gooseDialect, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %s provider: %w", dialect, err)
	}
	return p, nil
}
