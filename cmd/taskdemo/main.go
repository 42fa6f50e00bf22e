// Command taskdemo shows taskrepo's three roles on a real PostgreSQL
// database: a producer that pushes tasks inside its own business
// transactions, consumers that poll and complete them concurrently, and an
// operator that counts and purges.
//
// It connects to $TASK_DATABASE_URL (default: the local server as user
// postgres), brings the schema up to date and leaves its tables behind.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const (
	topic     = "demo-invoices"
	orders    = 500
	consumers = 3
)

func main() {
	url := os.Getenv("TASK_DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	if err := run(context.Background(), url); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrations.Up(ctx, stdlib.OpenDBFromPool(pool), migrations.Postgres); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS demo_order (id text PRIMARY KEY, total int NOT NULL)`); err != nil {
		return err
	}
	operator, err := taskpg.New("demo-operator")
	if err != nil {
		return err
	}
	if _, err := operator.Initialize(ctx, pool, topic); err != nil {
		return err
	}
	start := time.Now()
	if err := produce(ctx, pool, operator); err != nil {
		return err
	}
	fmt.Printf("producer: %d orders and their tasks committed in %v\n", orders, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := consume(ctx, pool); err != nil {
		return err
	}
	fmt.Printf("consumers: queue drained in %v\n", time.Since(start).Round(time.Millisecond))
	return operate(ctx, pool, operator)
}

// produce writes each order and its task in one transaction.
func produce(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	run := time.Now().UnixNano()
	for i := range orders {
		id := fmt.Sprintf("order-%d-%d", run, i)
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO demo_order (id, total) VALUES ($1, $2)", id, 10+i%90)
		if err == nil {
			_, err = repo.Push(ctx, tx, topic, taskapi.Append,
				taskapi.Creation{Identifier: id, Input: fmt.Sprintf(`{"order":%q}`, id), Reference: fmt.Sprintf("customer-%d", i%7)})
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			return errors.Join(err, tx.Rollback(ctx))
		}
	}
	return nil
}

// consume runs consumers that poll batches until the topic is empty.
func consume(ctx context.Context, pool *pgxpool.Pool) error {
	var wg sync.WaitGroup
	errs := make([]error, consumers)
	for c := range consumers {
		wg.Go(func() { errs[c] = consumer(ctx, pool, fmt.Sprintf("demo-consumer-%d", c)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func consumer(ctx context.Context, pool *pgxpool.Pool, owner string) error {
	repo, err := taskpg.New(owner)
	if err != nil {
		return err
	}
	if _, err := repo.Register(ctx, pool); err != nil {
		return err
	}
	processed := 0
	for {
		tasks, err := repo.Poll(ctx, pool, topic, 50)
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
		if err := repo.Complete(ctx, pool, topic, done...); err != nil {
			return err
		}
		processed += len(tasks)
	}
}

// operate prints the counts, revives the failures and purges what is done.
func operate(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	if err := printCounts(ctx, pool, repo, "before purge"); err != nil {
		return err
	}
	revived, err := repo.Revive(ctx, pool, topic, taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 1000)
	if err != nil {
		return err
	}
	fmt.Printf("operator: %d failed tasks set ready again\n", len(revived))
	purged, err := taskapi.PurgeBefore[taskpg.DB](ctx, repo, pool, topic, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("operator: purged %d finished tasks created up to now\n", purged)
	return printCounts(ctx, pool, repo, "after purge")
}

func printCounts(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, when string) error {
	counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
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
