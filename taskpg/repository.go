package taskpg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// DB is the database handle that every method of Repository takes: a pool, a
// connection or a transaction of pgx (*pgxpool.Pool, *pgx.Conn, pgx.Tx).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ DB                     = (*pgxpool.Pool)(nil)
	_ DB                     = (*pgx.Conn)(nil)
	_ DB                     = pgx.Tx(nil)
	_ taskapi.Repository[DB] = (*Repository)(nil)
)

// Repository is a task repository on PostgreSQL for one owner. It is safe for
// concurrent use.
type Repository struct {
	owner  string
	schema string         // the schema name, quoted
	table  pgx.Identifier // the task table, for COPY
	q      queries
}

// Option configures a Repository.
type Option func(*settings)

type settings struct {
	schema    string
	exclusive bool
}

// WithExclusive declares a single consumer: no query skips locked rows (no
// SKIP LOCKED); each waits for the lock instead.
func WithExclusive() Option {
	return func(s *settings) { s.exclusive = true }
}

// WithSchema names the schema that holds the tables ("public" by default).
func WithSchema(name string) Option {
	return func(s *settings) { s.schema = name }
}

// maxSchemaLength is PostgreSQL's limit on identifiers; longer names would be
// truncated silently.
const maxSchemaLength = 63

// New returns a repository for owner. The owner need not be registered yet
// (see Register).
func New(owner string, opts ...Option) (*Repository, error) {
	s := settings{schema: "public"}
	for _, opt := range opts {
		opt(&s)
	}
	if err := check.Owner(owner); err != nil {
		return nil, fmt.Errorf("taskpg: new: %w", err)
	}
	if err := checkSchema(s.schema); err != nil {
		return nil, fmt.Errorf("taskpg: new: %w", err)
	}
	schema := pgx.Identifier{s.schema}.Sanitize()
	return &Repository{
		owner: owner, schema: schema, table: pgx.Identifier{s.schema, "task"},
		q: newQueries(schema, s.exclusive),
	}, nil
}

func checkSchema(schema string) error {
	if schema == "" || len(schema) > maxSchemaLength {
		return fmt.Errorf("schema %q must be 1 to %d bytes long: %w", schema, maxSchemaLength, taskapi.ErrInvalidArgument)
	}
	return check.Text("schema", schema)
}

// Owner returns the name of this owner.
func (r *Repository) Owner() string { return r.owner }
