package main

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// roomy is the capacity of the topic in runCapacity: far more than the
// pushes fill, so that every push is admitted and none refused.
const roomy = 1 << 40

// runCapacity measures what admission costs (issue 25): the bulk and the
// single push of runBulk and runSingle, into a topic with a capacity that
// they never reach, against the same pushes into a topic without one, in
// alternating rounds.
func runCapacity(ctx context.Context, b *bench) error {
	producers := b.scale.singleProducers
	kinds := []struct {
		key, name, note string
		warm, n, rounds int // rounds: of each side's turn, the median taken (as runSingle takes it)
		push            func(repo *taskpg.Repository, pool *pgxpool.Pool, n int) error
	}{
		{"bulk", "bulk push (batches of 1,000)", "taskrepo Push Append on the pool", pushBatch, b.scale.bulk, 1,
			func(repo *taskpg.Repository, pool *pgxpool.Pool, n int) error {
				return taskPush(ctx, repo, pool, taskapi.Append, n, pushBatch, uniqueIdentifier)
			}},
		{"single", "single push (a transaction of its own)", strconv.Itoa(producers) + " producers at once; taskrepo Push on the pool",
			10 * producers, b.scale.single, b.scale.singleRounds,
			func(repo *taskpg.Repository, pool *pgxpool.Pool, n int) error {
				return taskSinglePush(ctx, repo, pool, n, producers)
			}},
	}
	for _, k := range kinds {
		side := func(capacity int64) sideRun {
			name := "none"
			if capacity > 0 {
				name = "capacity"
			}
			return sideRun{name: name, run: func(pool *pgxpool.Pool) (result, error) {
				repo, err := setupTaskrepo(ctx, pool)
				if err != nil {
					return result{}, err
				}
				if err := repo.SetCapacity(ctx, pool, topic, taskapi.Capacity{Ready: capacity}); err != nil {
					return result{}, err
				}
				return median(ctx, pool, k.warm, k.n, k.rounds, func(n int) error { return k.push(repo, pool, n) })
			}}
		}
		scenario := "capacity_" + k.key
		res, err := b.alternate(ctx, scenario, b.scale.rounds, side(0), side(roomy))
		if err != nil {
			return err
		}
		without, with := &res[0], &res[1]
		b.report.throughput(scenario+"_none", k.name+" into a topic without a capacity", without, rivers{}, 0, k.note)
		b.report.costs(scenario+"_none", k.name+" into a topic without a capacity", without, rivers{}, 0)
		b.report.relativeTo(scenario, k.name+" into a topic with a capacity", with, without, 0.8,
			k.note+"; the capacity is never reached; ratio: with ÷ without, in the same run")
		b.report.costs(scenario, k.name+" into a topic with a capacity", with, rivers{}, 0)
	}
	return nil
}
