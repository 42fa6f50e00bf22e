package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

const (
	topic     = "demo-invoices"
	orders    = 500
	consumers = 3
)

// world is what the demo needs of a backend: its handle, its repositories,
// its transactions, and the business table the producer writes to.
type world[Tx any] struct {
	db          Tx
	newRepo     func(owner string) (taskapi.Repository[Tx], error)
	inTx        func(ctx context.Context, fn func(tx Tx) error) error
	insertOrder func(ctx context.Context, tx Tx, id string, total int) error
}

func run[Tx any](ctx context.Context, w world[Tx]) error {
	operator, err := w.newRepo("demo-operator")
	if err != nil {
		return err
	}
	if _, err := operator.Initialize(ctx, w.db, topic); err != nil {
		return err
	}
	start := time.Now()
	if err := produce(ctx, w, operator); err != nil {
		return err
	}
	fmt.Printf("producer: %d orders, each committed with its task, in %v\n", orders, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := consume(ctx, w); err != nil {
		return err
	}
	fmt.Printf("consumers: queue drained in %v\n", time.Since(start).Round(time.Millisecond))
	return operate(ctx, w, operator)
}

// produce writes each order and its task in one transaction.
func produce[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx]) error {
	run := time.Now().UnixNano()
	for i := range orders {
		id := fmt.Sprintf("order-%d-%d", run, i)
		err := w.inTx(ctx, func(tx Tx) error {
			if err := w.insertOrder(ctx, tx, id, 10+i%90); err != nil {
				return err
			}
			_, err := repo.Push(ctx, tx, topic, taskapi.Append, taskapi.Creation{
				Identifier: id, Input: fmt.Sprintf(`{"order":%q}`, id), Reference: fmt.Sprintf("customer-%d", i%7),
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// consume runs consumers that poll batches until the topic is empty.
func consume[Tx any](ctx context.Context, w world[Tx]) error {
	var wg sync.WaitGroup
	errs := make([]error, consumers)
	for c := range consumers {
		wg.Go(func() { errs[c] = consumer(ctx, w, fmt.Sprintf("demo-consumer-%d", c)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func consumer[Tx any](ctx context.Context, w world[Tx], owner string) error {
	repo, err := w.newRepo(owner)
	if err != nil {
		return err
	}
	if _, err := repo.Register(ctx, w.db); err != nil {
		return err
	}
	processed := 0
	for {
		tasks, err := repo.Poll(ctx, w.db, topic, 50)
		if err != nil || len(tasks) == 0 {
			fmt.Printf("  %s processed %d tasks\n", owner, processed)
			return err
		}
		done := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			result := taskapi.Success
			if task.Sequence%25 == 0 { // a few invoices fail
				result = taskapi.Failure
			}
			done[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: result, Output: "invoiced"}}
		}
		if err := repo.Complete(ctx, w.db, topic, done...); err != nil {
			return err
		}
		processed += len(tasks)
	}
}

// operate prints the counts, revives the failures and purges what is done.
func operate[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx]) error {
	if err := printCounts(ctx, w, repo, "before purge"); err != nil {
		return err
	}
	revived, err := repo.Revive(ctx, w.db, topic, taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 1000)
	if err != nil {
		return err
	}
	fmt.Printf("operator: %d failed tasks set ready again\n", len(revived))
	purged, err := taskapi.PurgeBefore(ctx, repo, w.db, topic, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("operator: purged %d finished tasks created up to now\n", purged)
	return printCounts(ctx, w, repo, "after purge")
}

func printCounts[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx], when string) error {
	counts, err := repo.Count(ctx, w.db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
	if err != nil {
		return err
	}
	fmt.Printf("operator: counts %s:", when)
	for s := taskapi.Active; s <= taskapi.Redundant; s++ {
		if sum, ok := counts[topic][s]; ok {
			fmt.Printf(" %v=%d", s, sum.Count)
		}
	}
	fmt.Println()
	return nil
}
