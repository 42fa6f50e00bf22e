package taskansi

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"sync"
	"time"

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
	plain   string // the schema name as given, for the keys of locks
	q       queries
	// incarnation tells this value from others that register the same
	// owner name, such as the same process started again.
	incarnation string
	wake        *wakeUps // which pushes notify their topic's channel
	// capped holds the topics known to have a capacity, whose pushes lock
	// the topic's row exclusively at once where they take turns on it
	// (see lockTopic).
	capped sync.Map
	// limited holds the topics whose last poll found limits: on
	// PostgreSQL their completions wake the consumers waiting at a limit
	// (see freed).
	limited sync.Map
}

// Option configures a Repository.
type Option func(*settings)

type settings struct {
	schema       *string
	exclusive    bool
	wakeOff      bool
	wakeInterval time.Duration
	quiet        []string
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

// WithWakeUps sets, on PostgreSQL, the interval within which pushes of a
// topic notify its channel (taskpg.TasksChannel of the schema) once: the
// first push of a topic in an interval notifies, the others of the
// interval do not; 0 notifies every push. It turns wake-ups on again after
// WithoutWakeUps. Wake-ups are on by default, every 2 ms, as in package
// taskpg, whose Notifier hears them. Other dialects have no channel and
// ignore it (see PollNotifier).
func WithWakeUps(interval time.Duration) Option {
	return func(s *settings) { s.wakeOff, s.wakeInterval = false, interval }
}

// WithoutWakeUps turns notifying off: no push of this repository notifies.
func WithoutWakeUps() Option {
	return func(s *settings) { s.wakeOff = true }
}

// WithQuietTopics turns notifying off for pushes to topics.
func WithQuietTopics(topics ...string) Option {
	return func(s *settings) { s.quiet = append(s.quiet, topics...) }
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
	s := settings{schema: &spec.schema, wakeInterval: defaultWakeInterval}
	for _, opt := range opts {
		opt(&s)
	}
	if err := check.Owner(owner); err != nil {
		return nil, fmt.Errorf("taskansi: new: %w", err)
	}
	if err := checkSchema(*s.schema); err != nil {
		return nil, fmt.Errorf("taskansi: new: %w", err)
	}
	if s.wakeInterval < 0 {
		return nil, fmt.Errorf("taskansi: new: wake-up interval %v is negative: %w", s.wakeInterval, taskapi.ErrInvalidArgument)
	}
	schema := ""
	if *s.schema != "" {
		schema = spec.quoteIdentifier(*s.schema)
	}
	q := newQueries(spec, schema, s.exclusive)
	return &Repository{
		owner: owner, dialect: spec, schema: schema, plain: *s.schema,
		q: q, incarnation: rand.Text(), wake: newWakeUps(s, spec, q, *s.schema),
	}, nil
}

func checkSchema(schema string) error {
	if len(schema) > maxSchemaLength {
		return fmt.Errorf("schema %q is over %d bytes long: %w", check.Short(schema), maxSchemaLength, taskapi.ErrInvalidArgument)
	}
	return check.Text("schema", schema)
}

// Owner returns the name of this owner.
func (r *Repository) Owner() string { return r.owner }
