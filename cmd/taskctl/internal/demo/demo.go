// Package demo is 'taskctl demo': producers push tasks into six demo
// topics while taskproc consumers (Clients, an owner each) work them, each
// topic showing one side of taskrepo (every result, Replace, a composite
// pipeline, retries with backoff, deferral, a pause), until every task has
// settled; then it prints the tasks by state and result, the throughput and
// the latency from a push's commit to the start of its handler.
package demo

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Config is what the demo was asked to do, and where it reports.
type Config struct {
	Tasks     int           // how many tasks the producers push in all
	Consumers int           // taskproc Clients, an owner each
	Spread    time.Duration // how long the producers push
	Timeout   time.Duration // how long the tasks may take to settle after Spread
	// ListenURL is where the consumers' Notifiers LISTEN on PostgreSQL
	// (taskpg.WithListenURL): past a pooler in transaction mode. Empty:
	// on the database's own pool.
	ListenURL string

	Stdout, Stderr io.Writer // the summary; the progress
	JSON           bool      // the summary as JSON
	// Named says how the user named the database (a flag or a variable,
	// shown in the closing hints); empty for the default.
	Named string
}

// The limits of Config.
const (
	MinTasks     = 20
	MaxTasks     = 1_000_000
	MaxConsumers = 16
)

// Check refuses values out of their bounds, naming the flag of taskctl.
func (c Config) Check() error {
	switch {
	case c.Tasks < MinTasks || c.Tasks > MaxTasks:
		return fmt.Errorf("--tasks %d: give %d to %d", c.Tasks, MinTasks, MaxTasks)
	case c.Consumers < 1 || c.Consumers > MaxConsumers:
		return fmt.Errorf("--consumers %d: give 1 to %d", c.Consumers, MaxConsumers)
	case c.Spread < 0 || c.Spread > time.Hour:
		return fmt.Errorf("--duration %v: give 0s to 1h", c.Spread)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout %v: give a positive duration such as 60s", c.Timeout)
	}
	return nil
}

// Store is what the demo does to the database outside its producers and
// consumers, each call a transaction of its own (taskctl's store).
type Store interface {
	Shown() string // the database's URL without its password
	Initialize(ctx context.Context, topic string) (bool, error)
	Destroy(ctx context.Context, topic string) (bool, error)
	SetActivation(ctx context.Context, topic string, a taskapi.Activation) error
	Page(ctx context.Context, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error)
	Results(ctx context.Context, from, to time.Time) (map[string]map[taskapi.Result]int64, error)
}

// Repository is what the demo's producers and consumers need of a
// repository.
type Repository[Tx any] interface {
	taskapi.Repository[Tx]
	taskapi.Activator[Tx]
}

// Database is the database the demo runs on.
type Database[Tx any] struct {
	Store    Store
	DB       Tx // the pool or handle itself
	Repo     Repository[Tx]
	Transact func(ctx context.Context, fn func(tx Tx) error) error
	// NewRepo makes a repository of another owner (a consumer).
	NewRepo func(owner string) (Repository[Tx], error)
	Dialect migrations.Dialect
	Pool    *pgxpool.Pool // on PostgreSQL: the consumers' Notifier listens on it
	SQL     *sql.DB       // on SQLite: its connections are bounded while the demo runs
}

// Run runs the demo on db and prints its summary. Whatever happens, no
// consumer or producer is left running when it returns.
func Run[Tx any](ctx context.Context, db Database[Tx], c Config) error {
	return newDemoRun(db, c).run(ctx)
}

// Long is the long help of 'taskctl demo', which lists the demo topics.
func Long() string {
	var topics strings.Builder
	for _, t := range demoTopics {
		fmt.Fprintf(&topics, "  %-14s %s\n", t.name, t.shows)
	}
	return `demo shows taskrepo at work. With no --database it creates (or reuses) the
SQLite file taskrepo.db in the current directory and migrates it; it then
destroys and re-initializes its own topics, demo.*, and runs producers and
taskproc consumers (Clients, an owner each) at the same time:

` + topics.String() + `
It shows its progress on stderr (a bar on a terminal), waits until every
task has settled, stops the consumers and prints the tasks by state and
result, the throughput and the latency from a push's commit to the start
of its handler. On PostgreSQL the consumers wake up on notifications.
The topics stay afterwards for the other commands to look at.`
}
