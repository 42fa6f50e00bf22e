package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
)

// pushBatch is the batch of the bulk pushes.
const pushBatch = 1000

// runBulk measures Append in batches of 1,000 against River's InsertManyFast
// (COPY) in batches of 1,000.
func runBulk(ctx context.Context, b *bench) error {
	n := b.scale.bulk
	task, err := b.side(ctx, "bulk", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool)
		if err != nil {
			return result{}, err
		}
		return measure(ctx, pool, func() (int, string, error) {
			return n, "", taskPush(ctx, repo, pool, taskapi.Append, n, pushBatch, uniqueIdentifier)
		})
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "bulk", "river", func(pool *pgxpool.Pool) (result, error) {
		if err := setupRiver(ctx, pool); err != nil {
			return result{}, err
		}
		client, err := newRiverClient(pool, 0, nil)
		if err != nil {
			return result{}, err
		}
		return measure(ctx, pool, func() (int, string, error) {
			return n, "", riverPush(ctx, client, n, pushBatch)
		})
	})
	if err != nil {
		return err
	}
	b.report.throughput("bulk", "bulk push (batches of 1,000)", &task, &river, 1.5,
		"taskrepo Push Append; River InsertManyFast (COPY)")
	b.report.costs("bulk", "bulk push", &task, &river)
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
	b.report.throughput("replace", "Replace push (batches of 1,000)", &task, nil, 0,
		"every identifier already has a Ready or Succeeded task; River: no replace semantics")
	return nil
}

// runSingle measures one task per transaction, from several producers at
// once, against River's Insert in a transaction.
func runSingle(ctx context.Context, b *bench) error {
	n, producers := b.scale.single, b.scale.singleProducers
	task, err := b.side(ctx, "single", "taskrepo", func(pool *pgxpool.Pool) (result, error) {
		repo, err := setupTaskrepo(ctx, pool)
		if err != nil {
			return result{}, err
		}
		return measure(ctx, pool, func() (int, string, error) {
			return n, "", taskSinglePush(ctx, repo, pool, n, producers)
		})
	})
	if err != nil {
		return err
	}
	river, err := b.side(ctx, "single", "river", func(pool *pgxpool.Pool) (result, error) {
		if err := setupRiver(ctx, pool); err != nil {
			return result{}, err
		}
		client, err := newRiverClient(pool, 0, nil)
		if err != nil {
			return result{}, err
		}
		return measure(ctx, pool, func() (int, string, error) {
			return n, "", riverSinglePush(ctx, client, pool, n, producers)
		})
	})
	if err != nil {
		return err
	}
	b.report.throughput("single", "single push (one task per transaction)", &task, &river, 2,
		strconv.Itoa(producers)+" producers at once; River InsertTx")
	b.report.costs("single", "single push", &task, &river)
	return nil
}
