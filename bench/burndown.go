package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// runBurndown measures working a full queue: taskrepo with consumers polling
// batches of 100 and completing them, River with its client and MaxWorkers.
func runBurndown(ctx context.Context, b *bench) error {
	task, err := b.side(ctx, "burndown", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		return b.taskBurndown(ctx, pool, nil)
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "burndown", "river", func(pool *pgxpool.Pool) (result, error) {
		return b.riverBurndown(ctx, pool, nil)
	})
	if err != nil {
		return err
	}
	b.burn, b.riverBurn = &task, &river
	b.report.throughput("burndown", fmt.Sprintf("burn-down, %d consumers (b%d)", b.scale.consumers, pollSize), &task, &river, 1.3,
		fmt.Sprintf("taskrepo: %d consumers, poll and complete in separate transactions; River: MaxWorkers %d",
			b.scale.consumers, b.scale.riverWorkers))
	b.report.missing("burndown_taskproc", "burn-down through taskproc", "tasks/s", "n/a (taskproc not built yet)")
	b.report.costs("burndown", "burn-down", &task, &river)
	return nil
}

// taskBurndown loads a full queue, lets prepare set the stage, and measures
// the burn-down of the queue.
func (b *bench) taskBurndown(ctx context.Context, pool *pgxpool.Pool, prepare func() error) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return result{}, err
		}
	}
	if err := taskPush(ctx, repo, pool, taskapi.Append, b.scale.burn, pushBatch, uniqueIdentifier); err != nil {
		return result{}, err
	}
	return measure(ctx, pool, func() (int, string, error) {
		return taskBurn(ctx, pool, b.scale.consumers, b.scale.timeout)
	})
}

// riverBurndown is taskBurndown for River.
func (b *bench) riverBurndown(ctx context.Context, pool *pgxpool.Pool, prepare func() error) (result, error) {
	if err := setupRiver(ctx, pool); err != nil {
		return result{}, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return result{}, err
		}
	}
	client, err := newRiverClient(pool, b.scale.riverWorkers, nil)
	if err != nil {
		return result{}, err
	}
	if err := riverPush(ctx, client, b.scale.burn, pushBatch); err != nil {
		return result{}, err
	}
	return measure(ctx, pool, func() (int, string, error) {
		return riverBurn(ctx, client, b.scale.burn, b.scale.timeout)
	})
}

// trap is a condition the poll must survive.
type trap struct {
	key, name, note string
	after           func(ctx context.Context, pool *pgxpool.Pool, b *bench, repo *taskpg.Repository) error
	opts            []taskapi.PollOption // of the measured polls
}

// traps are run on taskrepo only, each with autovacuum off for the topic's
// partition so that the condition lasts the whole burn-down.
var traps = []trap{
	{"trap_nostats", "burn-down, no statistics", "the partition was never analyzed",
		func(context.Context, *pgxpool.Pool, *bench, *taskpg.Repository) error { return nil }, nil},
	{"trap_stale", "burn-down, stale statistics", "ANALYZE right after the load, while every task was Ready",
		func(ctx context.Context, pool *pgxpool.Pool, _ *bench, _ *taskpg.Repository) error {
			_, err := pool.Exec(ctx, "ANALYZE "+partition())
			return err
		}, nil},
	{"trap_novacuum", "burn-down, autovacuum behind", "a queue of the same size burnt down before, never vacuumed",
		func(ctx context.Context, pool *pgxpool.Pool, b *bench, repo *taskpg.Repository) error {
			if _, _, err := taskBurn(ctx, pool, b.scale.consumers, b.scale.timeout); err != nil {
				return err
			}
			return taskPush(ctx, repo, pool, taskapi.Append, b.scale.burn, pushBatch, uniqueIdentifier)
		}, nil},
	{"trap_singular", "burn-down, SingularByIdentifier, no statistics", "conditional polls (serialized per topic), the partition never analyzed",
		func(context.Context, *pgxpool.Pool, *bench, *taskpg.Repository) error { return nil },
		[]taskapi.PollOption{taskapi.SingularByIdentifier}},
}

// runTraps measures taskrepo's burn-down under each trap.
func runTraps(ctx context.Context, b *bench) error {
	for _, t := range traps {
		r, err := b.side(ctx, t.key, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
			return b.taskTrap(ctx, pool, t)
		})
		if err != nil {
			return err
		}
		b.report.relative(t.key, t.name, &r, b.burn, t.note)
	}
	return nil
}

// taskTrap loads the queue with autovacuum off, sets the trap and measures
// the burn-down.
func (b *bench) taskTrap(ctx context.Context, pool *pgxpool.Pool, t trap) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	if _, err := pool.Exec(ctx, "ALTER TABLE "+partition()+" SET (autovacuum_enabled = false)"); err != nil {
		return result{}, err
	}
	if err := taskPush(ctx, repo, pool, taskapi.Append, b.scale.burn, pushBatch, uniqueIdentifier); err != nil {
		return result{}, err
	}
	if err := t.after(ctx, pool, b, repo); err != nil {
		return result{}, err
	}
	return measure(ctx, pool, func() (int, string, error) {
		return taskBurn(ctx, pool, b.scale.consumers, b.scale.timeout, t.opts...)
	})
}

// runGrowth repeats the burn-down with many completed tasks already in the
// topic (stored through SQL, then vacuumed and analyzed).
func runGrowth(ctx context.Context, b *bench) error {
	old := b.scale.growthOld
	task, err := b.side(ctx, "growth", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		return b.taskBurndown(ctx, pool, func() error { return taskGrowth(ctx, pool, old) })
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "growth", "river", func(pool *pgxpool.Pool) (result, error) {
		return b.riverBurndown(ctx, pool, func() error { return riverGrowth(ctx, pool, old) })
	})
	if err != nil {
		return err
	}
	b.report.throughput("growth", fmt.Sprintf("burn-down with %s completed tasks", abbreviate(old)), &task, &river, 0,
		"old rows stored completed through SQL, then VACUUM ANALYZE")
	b.report.growth("growth_ratio", "growth ÷ empty burn-down", &task, &river, b.burn, b.riverBurn, 0.9)
	return nil
}

// abbreviate writes n briefly: 2M, 100k, 5000.
func abbreviate(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return fmt.Sprint(n)
}
