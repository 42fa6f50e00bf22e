package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// store is what the commands do to a repository, each call in a
// transaction of its own. One generic implementation, backend, serves
// taskpg and taskansi, so the commands are written once.
type store interface {
	Topics(ctx context.Context) ([]string, error)
	Initialize(ctx context.Context, topic string) (bool, error)
	Destroy(ctx context.Context, topic string) (bool, error)
	Activations(ctx context.Context) (map[string]taskapi.Activation, error)
	SetActivation(ctx context.Context, topic string, a taskapi.Activation) error
	// Capacities and SetCapacity read and set the capacity of topics
	// (taskapi.Capacitor).
	Capacities(ctx context.Context) (map[string]taskapi.Capacity, error)
	SetCapacity(ctx context.Context, topic string, capacity taskapi.Capacity) error
	// Limits and SetLimits read and set the limits of topics
	// (taskapi.Regulator).
	Limits(ctx context.Context) (map[string]taskapi.Limits, error)
	SetLimits(ctx context.Context, topic string, limits taskapi.Limits) error
	Push(ctx context.Context, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error)
	Page(ctx context.Context, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error)
	PageAt(ctx context.Context, topic string, listing taskapi.Listing, at time.Time, size int, direction taskapi.Direction) ([]taskapi.Info, error)
	Lookup(ctx context.Context, topic string, sequence int64) (taskapi.Info, bool, error)
	Find(ctx context.Context, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error)
	Count(ctx context.Context, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error)
	Results(ctx context.Context, from, to time.Time) (map[string]map[taskapi.Result]int64, error)
	Resolve(ctx context.Context, at time.Time, preceding bool) (int64, error)
	Revive(ctx context.Context, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) ([]taskapi.Revival, error)
	// ReviveCompletedBy, ReassignCompletedBy and PurgeCompletedBy are Revive,
	// ReassignAll and Purge that leave out the tasks completed after
	// completedBy (taskapi.CompletionBounded): the dashboard's actions bound to what
	// their confirmation saw.
	ReviveCompletedBy(ctx context.Context, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time, size int) ([]taskapi.Revival, error)
	ReassignCompletedBy(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range, completedBy time.Time) (int64, error)
	PurgeCompletedBy(ctx context.Context, topic string, span taskapi.Range, completedBy time.Time, states []taskapi.State) (int64, error)
	// Now reads the database's clock (taskapi.Clock).
	Now(ctx context.Context) (time.Time, error)
	// Schema returns the version of the database's taskrepo schema and
	// the one this taskctl brings (serve's /healthz).
	Schema(ctx context.Context) (current, latest int64, err error)
	// Lookups finds the tasks of topic with the given sequences in one
	// transaction, by sequence; a sequence with no task is left out.
	Lookups(ctx context.Context, topic string, sequences []int64) (map[int64]taskapi.Info, error)
	ReviveTasks(ctx context.Context, topic string, how taskapi.Revivification, tasks []taskapi.Task) ([]taskapi.Revival, error)
	Reassign(ctx context.Context, topic string, assignments []taskapi.Assignment) error
	ReassignAll(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range) (int64, error)
	Defer(ctx context.Context, topic string, until time.Time, tasks []taskapi.Task) error
	// Cancel, CancelIdentifier and CancelIn cancel tasks
	// (taskapi.Canceller; store_cancel.go).
	Cancel(ctx context.Context, topic, reason string, sequences []int64) ([]taskapi.Cancellation, error)
	CancelIdentifier(ctx context.Context, topic, identifier, reason string) ([]taskapi.Cancellation, error)
	CancelIn(ctx context.Context, topic, reason string, confirmed map[int64]taskapi.State) ([]taskapi.Cancellation, error)
	Purge(ctx context.Context, topic string, span taskapi.Range, states []taskapi.State) (int64, error)
	Owners(ctx context.Context, within time.Duration) ([]string, error)
	PurgeOwners(ctx context.Context, after time.Duration) (int64, error)
	Expire(ctx context.Context, after time.Duration) (int64, error)
	Roster(ctx context.Context) ([]taskapi.OwnerStatus, error)
	Record(ctx context.Context, entry taskapi.AuditEntry) (taskapi.AuditEntry, error)
	AuditLog(ctx context.Context, before int64, limit int) ([]taskapi.AuditEntry, error)
	// Pages runs read in one transaction of its own, with a Pager whose
	// pages are read in that transaction: many small reads for the round
	// trips of one transaction (the dashboard's heads of READY tasks).
	Pages(ctx context.Context, read func(p ops.Pager) error) error
	// Shown is the database's URL without its password.
	Shown() string
	Close()
}

// repository is what taskctl needs of taskpg's and taskansi's
// repositories.
type repository[Tx any] interface {
	taskapi.Repository[Tx]
	taskapi.Activator[Tx]
	taskapi.Capacitor[Tx]
	taskapi.Regulator[Tx]
	taskapi.Roster[Tx]
	taskapi.Finder[Tx]
	taskapi.Auditor[Tx]
	taskapi.CompletionBounded[Tx]
	taskapi.Clock[Tx]
	taskapi.Canceller[Tx]
}

// backend is the store of one repository implementation.
type backend[Tx any] struct {
	conn     *connection
	db       Tx // the pool or handle itself, for calls of their own
	repo     repository[Tx]
	transact func(ctx context.Context, fn func(tx Tx) error) error
	// newRepo makes a repository of another owner (the demo's consumers).
	newRepo func(owner string) (repository[Tx], error)
}

// operatorName names the owner under which taskctl's own repository acts:
// it never polls, so the name only shows in logs.
func operatorName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("taskctl-%s-%d", host, os.Getpid())
}

// newStore returns the store of an open connection.
func newStore(c *connection) (store, error) {
	if c.dialect == migrations.Postgres {
		return newBackend(c, taskpg.DB(c.pool), transactPG(c.pool, c.readOnly), func(owner string) (repository[taskpg.DB], error) {
			return taskpg.New(owner)
		})
	}
	dialect, opts := taskansi.SQLite, (*sql.TxOptions)(nil)
	if c.dialect == migrations.MySQL {
		// READ COMMITTED, as docs/backends.md's MySQL section asks of transactions
		// that push with Replace: they must see concurrent commits.
		dialect, opts = taskansi.MySQL, &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return newBackend(c, taskansi.DB(c.db), taskansi.Transact(c.db, opts), func(owner string) (repository[taskansi.DB], error) {
		return taskansi.New(dialect, owner)
	})
}

func newBackend[Tx any](c *connection, db Tx, transact func(context.Context, func(Tx) error) error, newRepo func(string) (repository[Tx], error)) (*backend[Tx], error) {
	repo, err := newRepo(operatorName())
	if err != nil {
		return nil, err
	}
	return &backend[Tx]{conn: c, db: db, repo: repo, transact: transact, newRepo: newRepo}, nil
}

// in runs fn in a transaction of its own and returns its result.
func in[Tx, T any](ctx context.Context, b *backend[Tx], fn func(tx Tx) (T, error)) (T, error) {
	var out T
	err := b.transact(ctx, func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// in0 is in for calls that return only an error.
func in0[Tx any](ctx context.Context, b *backend[Tx], fn func(tx Tx) error) error {
	return b.transact(ctx, fn)
}

func (b *backend[Tx]) Shown() string { return b.conn.shown }
func (b *backend[Tx]) Close()        { b.conn.close() }

func (b *backend[Tx]) Schema(ctx context.Context) (int64, int64, error) {
	return b.conn.schemaVersion(ctx)
}

func (b *backend[Tx]) Topics(ctx context.Context) ([]string, error) {
	return in(ctx, b, func(tx Tx) ([]string, error) { return b.repo.Topics(ctx, tx) })
}

func (b *backend[Tx]) Initialize(ctx context.Context, topic string) (bool, error) {
	return in(ctx, b, func(tx Tx) (bool, error) { return b.repo.Initialize(ctx, tx, topic) })
}

func (b *backend[Tx]) Destroy(ctx context.Context, topic string) (bool, error) {
	return in(ctx, b, func(tx Tx) (bool, error) { return b.repo.Destroy(ctx, tx, topic) })
}

func (b *backend[Tx]) Activations(ctx context.Context) (map[string]taskapi.Activation, error) {
	return in(ctx, b, func(tx Tx) (map[string]taskapi.Activation, error) { return b.repo.Activations(ctx, tx) })
}

func (b *backend[Tx]) SetActivation(ctx context.Context, topic string, a taskapi.Activation) error {
	return in0(ctx, b, func(tx Tx) error { return b.repo.SetActivation(ctx, tx, topic, a) })
}

// Capacities returns the capacity of every topic that has one.
func (b *backend[Tx]) Capacities(ctx context.Context) (map[string]taskapi.Capacity, error) {
	return in(ctx, b, func(tx Tx) (map[string]taskapi.Capacity, error) { return b.repo.Capacities(ctx, tx) })
}

// SetCapacity sets the capacity of topic, the zero Capacity removing it.
func (b *backend[Tx]) SetCapacity(ctx context.Context, topic string, capacity taskapi.Capacity) error {
	return in0(ctx, b, func(tx Tx) error { return b.repo.SetCapacity(ctx, tx, topic, capacity) })
}

// Limits returns the limits of every topic that has any.
func (b *backend[Tx]) Limits(ctx context.Context) (map[string]taskapi.Limits, error) {
	return in(ctx, b, func(tx Tx) (map[string]taskapi.Limits, error) { return b.repo.Limits(ctx, tx) })
}

// SetLimits sets the limits of topic, zero Limits removing them.
func (b *backend[Tx]) SetLimits(ctx context.Context, topic string, limits taskapi.Limits) error {
	return in0(ctx, b, func(tx Tx) error { return b.repo.SetLimits(ctx, tx, topic, limits) })
}

func (b *backend[Tx]) Push(ctx context.Context, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Task, error) { return b.repo.Push(ctx, tx, topic, insertion, creations...) })
}

func (b *backend[Tx]) Page(ctx context.Context, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Info, error) {
		return b.repo.Page(ctx, tx, topic, listing, cursor, size, direction)
	})
}

func (b *backend[Tx]) PageAt(ctx context.Context, topic string, listing taskapi.Listing, at time.Time, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Info, error) {
		return taskapi.PageAt(ctx, b.repo, tx, topic, listing, at, size, direction)
	})
}

func (b *backend[Tx]) Lookup(ctx context.Context, topic string, sequence int64) (info taskapi.Info, found bool, err error) {
	err = in0(ctx, b, func(tx Tx) error {
		info, found, err = b.repo.Lookup(ctx, tx, topic, sequence)
		return err
	})
	return info, found, err
}

func (b *backend[Tx]) Find(ctx context.Context, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Info, error) { return b.repo.Find(ctx, tx, topic, search, cursor, size) })
}

func (b *backend[Tx]) Count(ctx context.Context, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	return in(ctx, b, func(tx Tx) (map[string]map[taskapi.State]taskapi.Summary, error) {
		return b.repo.Count(ctx, tx, snapshot, filter, span)
	})
}

func (b *backend[Tx]) Results(ctx context.Context, from, to time.Time) (map[string]map[taskapi.Result]int64, error) {
	return in(ctx, b, func(tx Tx) (map[string]map[taskapi.Result]int64, error) { return b.repo.Results(ctx, tx, from, to) })
}

func (b *backend[Tx]) Resolve(ctx context.Context, at time.Time, preceding bool) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) { return b.repo.Resolve(ctx, tx, at, preceding) })
}

func (b *backend[Tx]) Revive(ctx context.Context, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) ([]taskapi.Revival, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Revival, error) { return b.repo.Revive(ctx, tx, topic, how, state, span, size) })
}

func (b *backend[Tx]) ReviveCompletedBy(ctx context.Context, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time, size int) ([]taskapi.Revival, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Revival, error) {
		return b.repo.ReviveCompletedBy(ctx, tx, topic, how, state, span, completedBy, size)
	})
}

func (b *backend[Tx]) ReassignCompletedBy(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range, completedBy time.Time) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) {
		return b.repo.ReassignCompletedBy(ctx, tx, topic, from, to, span, completedBy)
	})
}

func (b *backend[Tx]) PurgeCompletedBy(ctx context.Context, topic string, span taskapi.Range, completedBy time.Time, states []taskapi.State) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) {
		return b.repo.PurgeCompletedBy(ctx, tx, topic, span, completedBy, states...)
	})
}

func (b *backend[Tx]) Now(ctx context.Context) (time.Time, error) {
	return in(ctx, b, func(tx Tx) (time.Time, error) { return b.repo.Now(ctx, tx) })
}

func (b *backend[Tx]) ReviveTasks(ctx context.Context, topic string, how taskapi.Revivification, tasks []taskapi.Task) ([]taskapi.Revival, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Revival, error) { return b.repo.ReviveTasks(ctx, tx, topic, how, tasks...) })
}

func (b *backend[Tx]) Reassign(ctx context.Context, topic string, assignments []taskapi.Assignment) error {
	return in0(ctx, b, func(tx Tx) error { return b.repo.Reassign(ctx, tx, topic, assignments...) })
}

func (b *backend[Tx]) ReassignAll(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) { return b.repo.ReassignAll(ctx, tx, topic, from, to, span) })
}

func (b *backend[Tx]) Defer(ctx context.Context, topic string, until time.Time, tasks []taskapi.Task) error {
	return in0(ctx, b, func(tx Tx) error { return b.repo.Defer(ctx, tx, topic, until, tasks...) })
}

func (b *backend[Tx]) Purge(ctx context.Context, topic string, span taskapi.Range, states []taskapi.State) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) { return b.repo.Purge(ctx, tx, topic, span, states...) })
}

func (b *backend[Tx]) Owners(ctx context.Context, within time.Duration) ([]string, error) {
	return in(ctx, b, func(tx Tx) ([]string, error) { return b.repo.Owners(ctx, tx, within) })
}

func (b *backend[Tx]) PurgeOwners(ctx context.Context, after time.Duration) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) { return b.repo.PurgeOwners(ctx, tx, after) })
}

func (b *backend[Tx]) Expire(ctx context.Context, after time.Duration) (int64, error) {
	return in(ctx, b, func(tx Tx) (int64, error) { return b.repo.Expire(ctx, tx, after) })
}

func (b *backend[Tx]) Roster(ctx context.Context) ([]taskapi.OwnerStatus, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.OwnerStatus, error) { return b.repo.Roster(ctx, tx) })
}

func (b *backend[Tx]) Record(ctx context.Context, entry taskapi.AuditEntry) (taskapi.AuditEntry, error) {
	return in(ctx, b, func(tx Tx) (taskapi.AuditEntry, error) { return b.repo.Record(ctx, tx, entry) })
}

func (b *backend[Tx]) AuditLog(ctx context.Context, before int64, limit int) ([]taskapi.AuditEntry, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.AuditEntry, error) { return b.repo.AuditLog(ctx, tx, before, limit) })
}

func (b *backend[Tx]) Pages(ctx context.Context, read func(p ops.Pager) error) error {
	return in0(ctx, b, func(tx Tx) error { return read(txPager[Tx]{repo: b.repo, tx: tx}) })
}

// txPager pages tasks in one transaction, tx.
type txPager[Tx any] struct {
	repo repository[Tx]
	tx   Tx
}

func (p txPager[Tx]) Page(ctx context.Context, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	return p.repo.Page(ctx, p.tx, topic, listing, cursor, size, direction)
}
