package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// pushBatch is the batch of the bulk pushes.
const pushBatch = 1000

// runBulk measures Append in batches of 1,000 against River's InsertManyFast
// (COPY) in batches of 1,000, one producer each.
func runBulk(ctx context.Context, b *bench) error {
	n, rounds := b.scale.bulk, b.scale.bulkRounds
	task, err := b.side(ctx, "bulk", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool)
		if err != nil {
			return result{}, err
		}
		return median(ctx, pool, pushBatch, n, rounds, func(n int) error {
			return taskPush(ctx, repo, pool, taskapi.Append, n, pushBatch, uniqueIdentifier)
		})
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "bulk", "river", func(pool *pgxpool.Pool) (result, error) {
		if err := setupRiver(ctx, pool); err != nil {
			return result{}, err
		}
		client, err := newRiverClient(pool, riverInserter, nil, nil)
		if err != nil {
			return result{}, err
		}
		return median(ctx, pool, pushBatch, n, rounds, func(n int) error {
			return riverPush(ctx, client, n, pushBatch)
		})
	})
	if err != nil {
		return err
	}
	b.report.throughput("bulk", "bulk push (batches of 1,000)", &task, rivers{tuned: &river}, 1.5,
		"taskrepo Push Append; River InsertManyFast (COPY)")
	b.report.costs("bulk", "bulk push", &task, rivers{tuned: &river}, 0)
	return nil
}

// runReplace measures Replace in batches of 1,000 where every identifier was
// pushed once before, so each push also makes an older task Redundant.
// River has no counterpart (its unique jobs skip a duplicate rather than
// replace the older one).
func runReplace(ctx context.Context, b *bench) error {
	n := b.scale.bulk
	half := func(i int) string { return "task-" + strconv.Itoa(i%(n/2)) }
	task, err := b.side(ctx, "replace", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool)
		if err != nil {
			return result{}, err
		}
		if err := taskPush(ctx, repo, pool, taskapi.Append, n/2, pushBatch, half); err != nil {
			return result{}, err
		}
		return measure(ctx, pool, func() (int, string, error) {
			over, release := closeAfter(b.scale.timeout)
			defer release()
			pushed, err := taskPushFor(ctx, repo, pool, taskapi.Replace, n, pushBatch, half, over)
			if pushed < n {
				return pushed, fmt.Sprintf("cut short after %s", b.scale.timeout), err
			}
			return pushed, "", err
		})
	})
	if err != nil {
		return err
	}
	b.report.throughput("replace", "Replace push (batches of 1,000)", &task, rivers{}, 0,
		"every identifier already has a Ready or Succeeded task; River: no replace semantics")
	return nil
}

// runSingle measures one task per transaction, from several producers at
// once, two ways: a push that is a transaction of its own (taskrepo Push on
// the pool against River's Insert, which runs its own transaction) and a push
// inside a transaction the producer began (Push on the transaction against
// River's InsertTx).
func runSingle(ctx context.Context, b *bench) error {
	about := strconv.Itoa(b.scale.singleProducers) + " producers at once; "
	task, river, err := singleSides(ctx, b, "single", taskSinglePush, riverSingleInsert)
	if err != nil {
		return err
	}
	b.report.throughput("single", "single push (a transaction of its own)", &task, rivers{tuned: &river}, 2,
		about+"taskrepo Push on the pool; River Insert")
	b.report.costs("single", "single push", &task, rivers{tuned: &river}, 0)
	off, err := b.side(ctx, "single-off", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool, taskpg.WithoutWakeUps())
		if err != nil {
			return result{}, err
		}
		return median(ctx, pool, 10*b.scale.singleProducers, b.scale.single, b.scale.singleRounds, func(n int) error {
			return taskSinglePush(ctx, repo, pool, n, b.scale.singleProducers)
		})
	})
	if err != nil {
		return err
	}
	b.report.throughput("single-off", "single push, wake-ups off", &off, rivers{tuned: &river}, 0,
		about+"taskrepo Push on the pool with taskpg.WithoutWakeUps, against the River of the row above")
	b.report.costs("single-off", "single push, wake-ups off", &off, rivers{tuned: &river}, 0)
	task, river, err = singleSides(ctx, b, "single-tx", taskSinglePushTx, riverSingleInsertTx)
	if err != nil {
		return err
	}
	b.report.throughput("single-tx", "single push (in the producer's transaction)", &task, rivers{tuned: &river}, 0,
		about+"Begin; taskrepo Push or River InsertTx; Commit")
	return nil
}

// singlePush pushes n tasks, one per transaction, from producers goroutines.
type singlePush[T any] func(ctx context.Context, to T, pool *pgxpool.Pool, n, producers int) error

// singleSides runs one single-push scenario on both sides.
func singleSides(ctx context.Context, b *bench, scenario string, taskPush singlePush[*taskpg.Repository], riverPush singlePush[*river.Client[pgx.Tx]]) (task, riv result, err error) {
	producers := b.scale.singleProducers
	task, err = b.side(ctx, scenario, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool)
		if err != nil {
			return result{}, err
		}
		return median(ctx, pool, 10*producers, b.scale.single, b.scale.singleRounds, func(n int) error {
			return taskPush(ctx, repo, pool, n, producers)
		})
	})
	if err != nil {
		return task, riv, err
	}
	riv, err = b.side(ctx, scenario, "river", func(pool *pgxpool.Pool) (result, error) {
		if err := setupRiver(ctx, pool); err != nil {
			return result{}, err
		}
		client, err := newRiverClient(pool, riverInserter, nil, nil)
		if err != nil {
			return result{}, err
		}
		return median(ctx, pool, 10*producers, b.scale.single, b.scale.singleRounds, func(n int) error {
			return riverPush(ctx, client, pool, n, producers)
		})
	})
	return task, riv, err
}

// median warms the pool up with a push of warm tasks, so that connecting and
// preparing statements are not timed, then measures rounds pushes of n tasks
// into the same table and returns the median round. A round lasts about a
// second or less, short enough for one checkpoint or neighbour to swing it.
func median(ctx context.Context, pool *pgxpool.Pool, warm, n, rounds int, push func(n int) error) (result, error) {
	if err := push(warm); err != nil {
		return result{}, err
	}
	results := make([]result, rounds)
	for i := range results {
		r, err := measure(ctx, pool, func() (int, string, error) {
			return n, "", push(n)
		})
		if err != nil {
			return result{}, err
		}
		results[i] = r
	}
	slices.SortFunc(results, func(a, b result) int { return cmp.Compare(a.rate(), b.rate()) })
	m := results[len(results)/2]
	if len(results) > 1 {
		m.note = fmt.Sprintf("median of %d rounds", len(results))
	}
	return m, nil
}
