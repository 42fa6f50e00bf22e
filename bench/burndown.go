package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// runBurndown measures working a full queue: taskrepo with consumers polling
// batches of 100 and completing them, then through taskproc, River tuned as
// river bench runs it and with its default fetch settings. taskrepo,
// taskproc and tuned River run the scale's rounds in alternating order,
// the median round counting (issue 24's targets: at least 2× River's rate,
// 1.4× less server CPU per task).
func runBurndown(ctx context.Context, b *bench) error {
	medians, err := b.alternate(ctx, "burndown", b.scale.rounds,
		sideRun{"taskrepo", func(pool *pgxpool.Pool) (result, error) { return b.taskBurndown(ctx, pool, nil) }},
		sideRun{"taskproc", func(pool *pgxpool.Pool) (result, error) { return b.procBurndown(ctx, pool, b.scale.proc) }},
		sideRun{"river", func(pool *pgxpool.Pool) (result, error) { return b.riverBurndown(ctx, pool, riverTuned, nil) }})
	if err != nil {
		return err
	}
	task, proc, tuned := medians[0], medians[1], medians[2]
	alike := procConfig{clients: b.scale.consumers, size: pollSize, pollers: 1}
	procAlike, err := b.side(ctx, "burndown", "taskproc-alike", func(pool *pgxpool.Pool) (result, error) {
		return b.procBurndown(ctx, pool, alike)
	})
	if err != nil {
		return err
	}
	defaults, err := b.side(ctx, "burndown", "river-defaults", func(pool *pgxpool.Pool) (result, error) {
		return b.riverBurndown(ctx, pool, riverDefaults, nil)
	})
	if err != nil {
		return err
	}
	rs := rivers{tuned: &tuned, defaults: &defaults}
	b.burn, b.riverBurn = &task, rs.tuned
	b.report.throughput("burndown", fmt.Sprintf("burn-down, %d consumers (b%d)", b.scale.consumers, pollSize), &task, rs, 1.3,
		fmt.Sprintf("taskrepo: %d consumers, poll and complete in separate transactions; %s", b.scale.consumers, rs.note()))
	b.report.costs("burndown", "burn-down", &task, rs, 0)
	b.report.throughput("burndown_taskproc", fmt.Sprintf("burn-down through taskproc, %s", b.scale.proc.short()), &proc, rs, 2,
		fmt.Sprintf("taskproc: %s; %s", b.scale.proc, rs.note()))
	b.report.share("burndown_taskproc_share", "burn-down through taskproc ÷ repository burn-down", &proc, &task, 0.9,
		fmt.Sprintf("the row above divided by the repository-level burn-down (%d consumers, b%d) of the same run", b.scale.consumers, pollSize))
	b.report.costs("burndown_taskproc", "burn-down through taskproc", &proc, rs, 1.4)
	b.report.relative("burndown_taskproc_alike", "burn-down through taskproc, "+alike.short(), &procAlike, b.burn,
		fmt.Sprintf("shaped as the repository-level consumers: %s", alike))
	return nil
}

// procBurndown loads the queue of taskBurndown and measures its burn-down
// through taskproc run as cfg.
func (b *bench) procBurndown(ctx context.Context, pool *pgxpool.Pool, cfg procConfig) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	if err := taskPush(ctx, repo, pool, taskapi.Append, b.scale.burn, pushBatch, uniqueIdentifier); err != nil {
		return result{}, err
	}
	p, err := newProcRun(pool, cfg, b.scale.burn, nil, nil, nil)
	if err != nil {
		return result{}, err
	}
	r, err := measure(ctx, pool, func() (int, string, error) {
		return p.burn(ctx, b.scale.timeout)
	})
	return r, errors.Join(err, p.stop())
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

// riverBurndown is taskBurndown for River tuned as t. The client is stopped
// once the clock has stopped.
func (b *bench) riverBurndown(ctx context.Context, pool *pgxpool.Pool, t riverTuning, prepare func() error) (result, error) {
	if err := setupRiver(ctx, pool); err != nil {
		return result{}, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return result{}, err
		}
	}
	client, err := newRiverClient(pool, t, nil, nil)
	if err != nil {
		return result{}, err
	}
	if err := riverPush(ctx, client, b.scale.burn, pushBatch); err != nil {
		return result{}, err
	}
	defer stopRiver(client)
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
// topic (stored through SQL, then vacuumed and analyzed), for taskrepo and
// River tuned as river bench runs it.
func runGrowth(ctx context.Context, b *bench) error {
	old := b.scale.growthOld
	task, err := b.side(ctx, "growth", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		return b.taskBurndown(ctx, pool, func() error { return taskGrowth(ctx, pool, old) })
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "growth", "river", func(pool *pgxpool.Pool) (result, error) {
		return b.riverBurndown(ctx, pool, riverTuned, func() error { return riverGrowth(ctx, pool, old) })
	})
	if err != nil {
		return err
	}
	b.report.throughput("growth", fmt.Sprintf("burn-down with %s completed tasks", abbreviate(old)), &task, rivers{tuned: &river}, 0,
		"old rows stored completed through SQL, then VACUUM ANALYZE; River "+riverTuned.name+" only")
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
