package taskansi

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// DB is the database handle that every method of Repository takes: a pool, a
// connection or a transaction of database/sql (*sql.DB, *sql.Conn, *sql.Tx).
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ DB                     = (*sql.DB)(nil)
	_ DB                     = (*sql.Conn)(nil)
	_ DB                     = (*sql.Tx)(nil)
	_ taskapi.Repository[DB] = (*Repository)(nil)
)

// Repository is a task repository on database/sql for one owner and one
// dialect. It is safe for concurrent use.
type Repository struct {
	owner   string
	dialect *dialect
	schema  string // the quoted schema name; empty: the connection's own
	q       queries
}

// Option configures a Repository.
type Option func(*settings)

type settings struct {
	schema    *string
	exclusive bool
}

// WithExclusive declares a single consumer: no query skips locked rows (no
// SKIP LOCKED); each waits for the lock instead. SQLite never skips.
func WithExclusive() Option {
	return func(s *settings) { s.exclusive = true }
}

// WithSchema names the schema (on MySQL: the database; on SQLite: the
// attached database) that holds the tables. The default is "public" on
// PostgreSQL, as in package taskpg, and the connection's own elsewhere; an
// empty name means the connection's own.
func WithSchema(name string) Option {
	return func(s *settings) { s.schema = &name }
}

// maxSchemaLength is the longest identifier of PostgreSQL and MySQL.
const maxSchemaLength = 63

// New returns a repository for owner on a database of dialect. The owner
// need not be registered yet (see Register).
func New(d Dialect, owner string, opts ...Option) (*Repository, error) {
	spec, err := lookupDialect(d)
	if err != nil {
		return nil, fmt.Errorf("taskansi: new: %w: %w", err, taskapi.ErrInvalidArgument)
	}
	s := settings{schema: &spec.schema}
	for _, opt := range opts {
		opt(&s)
	}
	if err := check.Owner(owner); err != nil {
		return nil, fmt.Errorf("taskansi: new: %w", err)
	}
	if err := checkSchema(*s.schema); err != nil {
		return nil, fmt.Errorf("taskansi: new: %w", err)
	}
	schema := ""
	if *s.schema != "" {
		schema = spec.quoteIdentifier(*s.schema)
	}
	return &Repository{owner: owner, dialect: spec, schema: schema, q: newQueries(spec, schema, s.exclusive)}, nil
}

func checkSchema(schema string) error {
	if len(schema) > maxSchemaLength {
		return fmt.Errorf("schema %q is over %d bytes long: %w", schema, maxSchemaLength, taskapi.ErrInvalidArgument)
	}
	return check.Text("schema", schema)
}

// Owner returns the name of this owner.
func (r *Repository) Owner() string { return r.owner }
