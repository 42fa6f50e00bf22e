package taskpg

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	syncatomic "sync/atomic"
	"time"

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
	plain  string         // the schema name as given, for the keys of locks
	table  pgx.Identifier // the task table, for COPY
	q      queries
	// incarnation tells this value from others that register the same
	// owner name, such as the same process started again.
	incarnation string
	wake        *wakeUps // which pushes notify their topic's channel
	capped      sync.Map // topics found with a capacity: their pushes go through admit at once
	limited     sync.Map // topics found with limits: the pollMode of their polls
	floors      sync.Map // topic → *floor (floor.go)
	// floorStreak and floorEvery are floor.go's constants, which the
	// package's tests change.
	floorStreak int
	floorEvery  time.Duration
	collation   collation // whether the database sorts by code point (find.go)
	// partitionsDenied is set once the role was refused a topic's
	// partition: statements go on task (see onTopic).
	partitionsDenied syncatomic.Bool
}

// Option configures a Repository.
type Option func(*settings)

type settings struct {
	schema       string
	exclusive    bool
	wakeOff      bool
	wakeInterval time.Duration
	quiet        []string
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

// WithWakeUps sets the interval within which pushes of a topic notify
// its channel (TasksChannel) once: the first push of a topic in an interval
// notifies, the others of the interval do not; 0 notifies every push. It
// turns wake-ups on again after WithoutWakeUps. Wake-ups are on by default,
// every 2 ms: NOTIFY serializes the commits that notify on a lock of the
// whole server, which this keeps to a few. They are hints: consumers poll
// again at once after a poll that found tasks, and every pause otherwise.
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

// maxSchemaLength is PostgreSQL's limit on identifiers; longer names would be
// truncated silently.
const maxSchemaLength = 63

// New returns a repository for owner. The owner need not be registered yet
// (see Register).
func New(owner string, opts ...Option) (*Repository, error) {
	s := settings{schema: "public", wakeInterval: defaultWakeInterval}
	for _, opt := range opts {
		opt(&s)
	}
	if err := check.Owner(owner); err != nil {
		return nil, fmt.Errorf("taskpg: new: %w", err)
	}
	if err := checkSchema(s.schema); err != nil {
		return nil, fmt.Errorf("taskpg: new: %w", err)
	}
	if s.wakeInterval < 0 {
		return nil, fmt.Errorf("taskpg: new: wake-up interval %v is negative: %w", s.wakeInterval, taskapi.ErrInvalidArgument)
	}
	schema := pgx.Identifier{s.schema}.Sanitize()
	q := newQueries(schema, s.schema, s.exclusive)
	return &Repository{
		owner: owner, schema: schema, plain: s.schema, table: pgx.Identifier{s.schema, "task"},
		q: q, incarnation: rand.Text(), wake: newWakeUps(s, q, s.schema),
		floorStreak: floorStreak, floorEvery: floorEvery,
	}, nil
}

func checkSchema(schema string) error {
	if schema == "" || len(schema) > maxSchemaLength {
		return fmt.Errorf("schema %q must be 1 to %d bytes long: %w", check.Short(schema), maxSchemaLength, taskapi.ErrInvalidArgument)
	}
	return check.Text("schema", schema)
}

// Owner returns the name of this owner.
func (r *Repository) Owner() string { return r.owner }
