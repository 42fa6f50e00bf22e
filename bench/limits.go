package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The limits scenario (issue 40, point 4): a poll of limitsPollSize beside
// one tenant's backlog of limitsHot Ready tasks and limitsQuiet quiet
// tenants of limitsPerQuiet tasks each, under no limits, an Active limit
// and both limits, timed poll by poll on the server's default settings (jit
// on), on taskpg and on taskansi over PostgreSQL. Each poll runs in a
// transaction of the bench's, timed up to its commit, which is not timed:
// the server's durable commit (fsync) is the same for every poll and its
// noise on a shared machine hid the polls' own times. Each poll's tasks
// are completed before the next poll, untimed, so that the backlog is
// consumed as consumers consume it; the first limitsWarm polls are not
// counted.
const (
	limitsHot      = 100_000
	limitsQuiet    = 5
	limitsPerQuiet = 200
	limitsPollSize = 5
	limitsWarm     = 20
)

// limitsModes are the limits of the topic in each run: none first, the
// reference of the ratios.
var limitsModes = []struct {
	name   string
	limits taskapi.Limits
}{
	{"none", taskapi.Limits{}},
	{"active", taskapi.Limits{Active: 50}},
	{"keyed", taskapi.Limits{Active: 50, PerIdentifier: 2}},
}

// limitsPoller polls (in a transaction, whose commit it returns) and
// completes through one repository.
type limitsPoller struct {
	poll     func(ctx context.Context) ([]taskapi.Task, func() error, error)
	complete func(ctx context.Context, tasks []taskapi.Task) error
	set      func(ctx context.Context, limits taskapi.Limits) error
}

// runLimits measures the polls of limitsModes on both repositories, each
// run in a database of its own.
func runLimits(ctx context.Context, b *bench) error {
	polls := 500
	if b.report.Quick {
		polls = 60
	}
	l := &Limits{Hot: limitsHot, Quiet: limitsQuiet, PerQuiet: limitsPerQuiet, Size: limitsPollSize, Polls: polls}
	for _, repository := range []string{"taskpg", "taskansi"} {
		var reference float64
		for _, mode := range limitsModes {
			run, err := b.limitsRun(ctx, repository, mode.limits, polls)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", repository, mode.name, err)
			}
			run.Limits = mode.name
			if mode.limits == (taskapi.Limits{}) {
				reference = run.MedianMS
			} else if reference > 0 {
				run.Ratio = run.MedianMS / reference
			}
			fmt.Fprintf(os.Stderr, "limits: %s %s: median %.2f ms, p99 %.2f ms\n", repository, mode.name, run.MedianMS, run.P99MS)
			l.Runs = append(l.Runs, run)
		}
	}
	b.report.Limits = l
	return nil
}

// limitsRun loads the backlog into a fresh database, sets limits and
// times polls through repository.
func (b *bench) limitsRun(ctx context.Context, repository string, limits taskapi.Limits, polls int) (LimitsRun, error) {
	pool, drop, err := b.fresh(ctx, "limits", repository)
	if err != nil {
		return LimitsRun{}, err
	}
	defer drop()
	if _, err := setupTaskrepo(ctx, pool); err != nil {
		return LimitsRun{}, err
	}
	if err := loadLimitsBacklog(ctx, pool); err != nil {
		return LimitsRun{}, err
	}
	p, closeDB, err := limitsPollerOf(ctx, pool, repository)
	if err != nil {
		return LimitsRun{}, err
	}
	defer closeDB()
	if limits != (taskapi.Limits{}) {
		if err := p.set(ctx, limits); err != nil {
			return LimitsRun{}, err
		}
	}
	var times []time.Duration
	for i := range limitsWarm + polls {
		start := time.Now()
		tasks, commit, err := p.poll(ctx)
		took := time.Since(start)
		if err == nil {
			err = commit()
		}
		if err != nil {
			return LimitsRun{}, err
		}
		if i >= limitsWarm {
			times = append(times, took)
		}
		if err := p.complete(ctx, tasks); err != nil {
			return LimitsRun{}, err
		}
	}
	slices.Sort(times)
	return LimitsRun{Repository: repository, MedianMS: quantileMS(times, 50), P99MS: quantileMS(times, 99)}, nil
}

// loadLimitsBacklog inserts the hot tenant's backlog, then the quiet
// tenants' tasks, in one statement, and takes statistics of them, as
// autovacuum would after such a load (the bench's server runs without).
func loadLimitsBacklog(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `
INSERT INTO public.task (topic, identifier, state, input)
SELECT $1, CASE WHEN g <= $2 THEN 'hot' ELSE 'quiet-' || (g % $3::integer) END, 1, 'in'
FROM generate_series(1, $4::integer) AS g`, topic, limitsHot, limitsQuiet, limitsHot+limitsQuiet*limitsPerQuiet); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "ANALYZE public.task")
	return err
}

// limitsPollerOf returns the poller of repository on pool, and what closes
// the handle it opened.
func limitsPollerOf(ctx context.Context, pool *pgxpool.Pool, repository string) (limitsPoller, func(), error) {
	completeAll := func(tasks []taskapi.Task) []taskapi.Completion {
		c := make([]taskapi.Completion, len(tasks))
		for i, t := range tasks {
			c[i] = taskapi.Completion{Task: t, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		return c
	}
	if repository == "taskpg" {
		repo, err := registered(ctx, pool, "bench-limits")
		if err != nil {
			return limitsPoller{}, nil, err
		}
		return limitsPoller{
			poll: func(ctx context.Context) ([]taskapi.Task, func() error, error) {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return nil, nil, err
				}
				tasks, err := repo.Poll(ctx, tx, topic, limitsPollSize)
				if err != nil {
					_ = tx.Rollback(ctx)
				}
				return tasks, func() error { return tx.Commit(ctx) }, err
			},
			complete: func(ctx context.Context, tasks []taskapi.Task) error {
				return repo.Complete(ctx, pool, topic, completeAll(tasks)...)
			},
			set: func(ctx context.Context, l taskapi.Limits) error { return repo.SetLimits(ctx, pool, topic, l) },
		}, func() {}, nil
	}
	db := stdlib.OpenDBFromPool(pool)
	repo, err := ansiRegistered(ctx, db)
	if err != nil {
		_ = db.Close()
		return limitsPoller{}, nil, err
	}
	return limitsPoller{
		poll: func(ctx context.Context) ([]taskapi.Task, func() error, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			tasks, err := repo.Poll(ctx, tx, topic, limitsPollSize)
			if err != nil {
				_ = tx.Rollback()
			}
			return tasks, tx.Commit, err
		},
		complete: func(ctx context.Context, tasks []taskapi.Task) error {
			return repo.Complete(ctx, db, topic, completeAll(tasks)...)
		},
		set: func(ctx context.Context, l taskapi.Limits) error { return repo.SetLimits(ctx, db, topic, l) },
	}, func() { _ = db.Close() }, nil
}

// ansiRegistered returns a registered taskansi repository on db, a
// PostgreSQL database that setupTaskrepo migrated.
func ansiRegistered(ctx context.Context, db *sql.DB) (*taskansi.Repository, error) {
	repo, err := taskansi.New(taskansi.Postgres, "bench-limits")
	if err != nil {
		return nil, err
	}
	if _, err := repo.Register(ctx, db); err != nil {
		return nil, err
	}
	return repo, nil
}

// quantileMS returns the p-th percentile of sorted in milliseconds.
func quantileMS(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(max(int(float64(len(sorted))*p/100+0.5)-1, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}
