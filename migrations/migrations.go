// Package migrations holds the database schema of taskrepo as goose
// migrations, one folder per SQL dialect, embedded in the binary.
//
// Up brings a database to the latest schema. It runs through goose's
// Provider with a session lock, so that several processes migrating the same
// database at start-up do not collide.
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
)

// Files holds the migrations, one folder per dialect.
//
//go:embed postgres/*.sql
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
	opts = append([]goose.ProviderOption{goose.WithSessionLocker(locker)}, opts...)
	p, err := goose.NewProvider(gooseDialect, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %s provider: %w", dialect, err)
	}
	return p, nil
}
