package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// topic is the one topic every taskrepo scenario uses.
const topic = "bench"

// pollSize is the batch of every poll: the b100.
const pollSize = 100

// idlePause is how long a consumer waits after an empty poll in the
// continuous runs (there is no LISTEN/NOTIFY wake-up without taskproc).
const idlePause = 5 * time.Millisecond

// setupTaskrepo migrates a fresh database, registers the topic and returns a
// registered repository for the producers, with opts after repoOptions.
func setupTaskrepo(ctx context.Context, pool *pgxpool.Pool, opts ...taskpg.Option) (*taskpg.Repository, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }() // a handle on the pool, which stays open
	if err := migrations.Up(ctx, db, migrations.Postgres); err != nil {
		return nil, err
	}
	repo, err := registered(ctx, pool, "bench-producer", opts...)
	if err != nil {
		return nil, err
	}
	if _, err := repo.Initialize(ctx, pool, topic); err != nil {
		return nil, err
	}
	return repo, nil
}

// registered returns a registered repository for owner, with opts after
// repoOptions.
func registered(ctx context.Context, pool *pgxpool.Pool, owner string, opts ...taskpg.Option) (*taskpg.Repository, error) {
	repo, err := taskpg.New(owner, append(slices.Clip(repoOptions), opts...)...)
	if err != nil {
		return nil, err
	}
	if _, err := repo.Register(ctx, pool); err != nil {
		return nil, err
	}
	return repo, nil
}

// partition returns the quoted name of the topic's partition, as the schema's
// trigger names it.
func partition() string {
	sum := md5.Sum([]byte(topic))
	return `public."task_` + hex.EncodeToString(sum[:]) + `"`
}

// creations returns n creations numbered from first; each input is the push
// time in unix nanoseconds, the identifier comes from ident.
func creations(first, n int, ident func(int) string) []taskapi.Creation {
	pushed := strconv.FormatInt(time.Now().UnixNano(), 10)
	cs := make([]taskapi.Creation, n)
	for i := range cs {
		cs[i] = taskapi.Creation{Identifier: ident(first + i), Input: pushed}
	}
	return cs
}

// uniqueIdentifier gives every task an identifier of its own.
func uniqueIdentifier(i int) string { return "task-" + strconv.Itoa(i) }

// taskPush pushes n tasks in batches of size with insertion, one batch per
// transaction, one after the other.
func taskPush(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, insertion taskapi.Insertion, n, size int, ident func(int) string) error {
	_, err := taskPushFor(ctx, repo, pool, insertion, n, size, ident, nil)
	return err
}

// taskPushFor is taskPush that stops early once over is closed (nil: never)
// and returns how many tasks it pushed.
func taskPushFor(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, insertion taskapi.Insertion, n, size int, ident func(int) string, over <-chan struct{}) (int, error) {
	first := 0
	for ; first < n && !closed(over); first += size {
		if _, err := repo.Push(ctx, pool, topic, insertion, creations(first, min(size, n-first), ident)...); err != nil {
			return first, err
		}
	}
	return min(first, n), nil
}

// taskSinglePush pushes n tasks from producers goroutines at once, each
// push a transaction of its own.
func taskSinglePush(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, n, producers int) error {
	return concurrently(ctx, n, producers, func(ctx context.Context, i int) error {
		_, err := repo.Push(ctx, pool, topic, taskapi.Append, creations(i, 1, uniqueIdentifier)...)
		return err
	})
}

// taskSinglePushTx pushes n tasks from producers goroutines at once, each
// in a transaction the producer begins and commits.
func taskSinglePushTx(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, n, producers int) error {
	return concurrently(ctx, n, producers, func(ctx context.Context, i int) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := repo.Push(ctx, tx, topic, taskapi.Append, creations(i, 1, uniqueIdentifier)...); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// concurrently calls do for 0..n-1 from workers goroutines.
func concurrently(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	next := 0
	for range workers {
		g.Go(func() error {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return nil
				}
				if err := do(ctx, i); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// consumer is one taskrepo owner that polls and completes.
type consumer struct {
	repo        *taskpg.Repository
	pool        *pgxpool.Pool
	start, done *latencies // nil: not recorded
	opts        []taskapi.PollOption
}

func newConsumers(ctx context.Context, pool *pgxpool.Pool, n int, start, done *latencies, opts ...taskapi.PollOption) ([]*consumer, error) {
	cs := make([]*consumer, n)
	for i := range cs {
		repo, err := registered(ctx, pool, fmt.Sprintf("bench-consumer-%d", i))
		if err != nil {
			return nil, err
		}
		cs[i] = &consumer{repo: repo, pool: pool, start: start, done: done, opts: opts}
	}
	return cs, nil
}

// step polls a batch in one transaction and completes it in another, and
// returns how many tasks it completed. Each call on the pool is a
// transaction of its own.
func (c *consumer) step(ctx context.Context) (int, error) {
	tasks, err := c.repo.Poll(ctx, c.pool, topic, pollSize, c.opts...)
	if err != nil || len(tasks) == 0 {
		return 0, err
	}
	polled := time.Now()
	completions := make([]taskapi.Completion, len(tasks))
	for i, t := range tasks {
		completions[i] = taskapi.Completion{Task: t, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	if err := c.repo.Complete(ctx, c.pool, topic, completions...); err != nil {
		return 0, err
	}
	completed := time.Now()
	c.record(tasks, polled, completed)
	return len(tasks), nil
}

func (c *consumer) record(tasks []taskapi.Task, polled, completed time.Time) {
	if c.start == nil {
		return
	}
	for _, t := range tasks {
		pushed, err := strconv.ParseInt(t.Input, 10, 64)
		if err != nil {
			continue
		}
		c.start.since(pushed, polled)
		c.done.since(pushed, completed)
	}
}

// taskBurn works the queue with consumers, polling with opts, until a poll
// comes back empty or timeout passes, and returns how many tasks were
// completed.
func taskBurn(ctx context.Context, pool *pgxpool.Pool, consumers int, timeout time.Duration, opts ...taskapi.PollOption) (int, string, error) {
	cs, err := newConsumers(ctx, pool, consumers, nil, nil, opts...)
	if err != nil {
		return 0, "", err
	}
	over, release := closeAfter(timeout)
	defer release()
	var (
		g     errgroup.Group
		mu    sync.Mutex
		total int
	)
	for _, c := range cs {
		g.Go(func() error {
			for !closed(over) {
				n, err := c.step(ctx)
				mu.Lock()
				total += n
				mu.Unlock()
				if err != nil || n == 0 {
					return err
				}
			}
			return nil
		})
	}
	err = g.Wait()
	if closed(over) {
		return total, fmt.Sprintf("cut short after %s", timeout), err
	}
	return total, "", err
}

// taskGrowth stores n tasks already Succeeded straight through SQL (a
// shortcut: pushing and completing 2M tasks through the API would take
// minutes and end in the same rows) and vacuums and analyzes the table, as
// autovacuum would have by then.
func taskGrowth(ctx context.Context, pool *pgxpool.Pool, n int) error {
	_, err := pool.Exec(ctx, `
INSERT INTO public.task (topic, identifier, state, descent, owner, completed, input)
SELECT $1, 'old-' || g, 6, 1, 'bench-old', now() AT TIME ZONE 'utc', '0'
FROM generate_series(1, $2::int) AS g`, topic, n)
	if err != nil {
		return fmt.Errorf("store completed tasks: %w", err)
	}
	_, err = pool.Exec(ctx, "VACUUM ANALYZE "+partition())
	return err
}
