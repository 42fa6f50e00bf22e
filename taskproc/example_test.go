package taskproc_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// openExample opens a fresh, migrated SQLite database in dir.
func openExample(dir string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tasks.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	if err := migrations.Up(context.Background(), db, migrations.SQLite); err != nil {
		log.Fatal(err)
	}
	return db
}

// A complete consumer service: it registers a handler for a topic, starts
// the runtime, and stops it when its work is done (a service would stop on
// a signal instead).
func Example() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()

	repo, _ := taskansi.New(taskansi.SQLite, "mailer-1")
	_, _ = repo.Initialize(ctx, db, "mail")
	_, _ = repo.Push(ctx, db, "mail", taskapi.Append,
		taskapi.Creation{Identifier: "user-42", Input: "welcome"},
		taskapi.Creation{Identifier: "user-7", Input: "reminder"})

	done := make(chan struct{}, 2)
	client, err := taskproc.New(repo, taskansi.Transact(db, nil))
	if err != nil {
		log.Fatal(err)
	}
	err = client.Handle("mail", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		fmt.Println("sending", task.Input, "to", task.Identifier)
		done <- struct{}{}
		return taskapi.Decision{Result: taskapi.Success, Output: "sent"}, nil
	}), taskproc.WithCondition(taskapi.SingularByIdentifier))
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-done
	<-done
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		log.Fatal(err)
	}
	counts, _ := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	fmt.Println("succeeded:", counts["mail"][taskapi.Succeeded].Count)
	// Output:
	// sending welcome to user-42
	// sending reminder to user-7
	// succeeded: 2
}

// CompleteTx writes the user's own data in the transaction that records the
// decisions: both commit, or neither.
func ExampleCompleteTx() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE receipts (identifier TEXT)"); err != nil {
		log.Fatal(err)
	}
	repo, _ := taskansi.New(taskansi.SQLite, "worker")
	_, _ = repo.Initialize(ctx, db, "orders")
	_, _ = repo.Push(ctx, db, "orders", taskapi.Append, taskapi.Creation{Identifier: "order-1"})

	settled := make(chan error, 1)
	m, err := taskproc.NewManager(repo, taskansi.Transact(db, nil), "orders", taskproc.HandlerFunc(
		func(ctx context.Context, b *taskproc.Batch) error {
			err := taskproc.CompleteTx(b, func(ctx context.Context, tx taskansi.DB) (taskproc.Decisions, error) {
				decisions := taskproc.Decisions{}
				for _, task := range b.Tasks() {
					if _, err := tx.ExecContext(ctx, "INSERT INTO receipts VALUES (?)", task.Identifier); err != nil {
						return nil, err
					}
					decisions[task] = taskapi.Decision{Result: taskapi.Success}
				}
				return decisions, nil
			})
			settled <- err
			return err
		}))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = repo.Register(ctx, db)
	_ = m.Start(ctx)
	fmt.Println("settled:", <-settled)
	_ = m.Stop(ctx)
	var receipts int
	_ = db.QueryRow("SELECT count(*) FROM receipts").Scan(&receipts)
	fmt.Println("receipts:", receipts)
	// Output:
	// settled: <nil>
	// receipts: 1
}

// A Composite runs steps that depend on each other; a context pushes a
// follow-up task for every task that succeeded, in the completing
// transaction.
func ExampleComposite() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()
	repo, _ := taskansi.New(taskansi.SQLite, "worker")
	_, _ = repo.Register(ctx, db)
	for _, topic := range []string{"invoices", "mail"} {
		_, _ = repo.Initialize(ctx, db, topic)
	}
	_, _ = repo.Push(ctx, db, "invoices", taskapi.Append,
		taskapi.Creation{Identifier: "invoice-1", Input: "100"}, taskapi.Creation{Identifier: "invoice-2", Input: "-5"})

	amounts := taskproc.NewKey[map[string]int]("amounts")
	steps := taskproc.NewComposite[taskansi.DB]().
		Step("parse", func(ctx context.Context, tasks []taskapi.Task, s *taskproc.Supplement) (taskproc.Outcomes, error) {
			parsed, outcomes := map[string]int{}, taskproc.Outcomes{}
			for _, task := range tasks {
				var amount int
				_, _ = fmt.Sscan(task.Input, &amount)
				parsed[task.Identifier] = amount
				outcomes[task] = taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success}}
			}
			return outcomes, amounts.Put(s, parsed)
		}).
		Each("check", func(ctx context.Context, task taskapi.Task, s *taskproc.Supplement) (taskproc.Outcome, error) {
			parsed, _ := amounts.Get(s)
			if parsed[task.Identifier] < 0 {
				return taskproc.Outcome{}, taskproc.EndWith(taskapi.Filter, fmt.Errorf("negative amount"))
			}
			return taskproc.Outcome{Decision: taskapi.Decision{Result: taskapi.Success}}, nil
		}, "parse").
		Context(func(ctx context.Context, tx taskansi.DB, c *taskproc.Completing) error {
			for _, task := range c.Tasks() {
				creation := taskapi.Creation{Identifier: "mail-" + task.Identifier}
				if err := c.PushTagged(task, "mail", taskapi.Append, creation); err != nil {
					return err
				}
			}
			return nil
		})
	handler, err := steps.Handler()
	if err != nil {
		log.Fatal(err)
	}
	m, _ := taskproc.NewManager(repo, taskansi.Transact(db, nil), "invoices", handler)
	_ = m.Start(ctx)
	for n := 0; n < 2; {
		counts, _ := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: "invoices"}, taskapi.Unbounded)
		n = int(counts["invoices"][taskapi.Succeeded].Count + counts["invoices"][taskapi.Filtered].Count)
		time.Sleep(10 * time.Millisecond)
	}
	_ = m.Stop(ctx)
	for _, topic := range []string{"invoices", "mail"} {
		infos, _ := repo.Page(ctx, db, topic, taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
		for _, info := range infos {
			fmt.Println(strings.TrimSpace(fmt.Sprintln(topic, info.Identifier, info.State, info.Reference)))
		}
	}
	// Output:
	// invoices invoice-1 SUCCEEDED
	// invoices invoice-2 FILTERED
	// mail mail-invoice-1 READY 1
}

// Per-task effects, order per identifier and retries in a few lines: each
// task's row is written in the transaction that completes the task, so it
// exists exactly once, with the task's result; a transient failure rolls
// the row back and the task runs again later.
func ExampleParallelTx() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec("CREATE TABLE charges (sequence INTEGER, customer TEXT, cents INTEGER)"); err != nil {
		log.Fatal(err)
	}

	repo, _ := taskansi.New(taskansi.SQLite, "billing-1")
	_, _ = repo.Register(ctx, db)
	_, _ = repo.Initialize(ctx, db, "charges")
	_, _ = repo.Push(ctx, db, "charges", taskapi.Append,
		taskapi.Creation{Identifier: "customer-1", Input: "500"},
		taskapi.Creation{Identifier: "customer-2", Input: "1200"},
		taskapi.Creation{Identifier: "customer-1", Input: "700"})

	failedOnce := false
	m, err := taskproc.NewManager(repo, taskansi.Transact(db, nil), "charges",
		taskproc.ParallelTx(4, func(ctx context.Context, tx taskansi.DB, task taskapi.Task) (taskapi.Decision, error) {
			if _, err := tx.ExecContext(ctx, "INSERT INTO charges VALUES (?, ?, ?)", task.Sequence, task.Identifier, task.Input); err != nil {
				return taskapi.Decision{}, err
			}
			if task.Identifier == "customer-2" && !failedOnce { // the payment service hiccups once
				failedOnce = true
				return taskapi.Decision{}, taskproc.Transient(errors.New("payment service unavailable"))
			}
			return taskapi.Decision{Result: taskapi.Success}, nil
		}),
		taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}))
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		log.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		counts, _ := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: "charges", States: []taskapi.State{taskapi.Succeeded}}, taskapi.Unbounded)
		if counts["charges"][taskapi.Succeeded].Count == 3 {
			break
		}
	}
	_ = m.Stop(ctx)
	rows, _ := db.Query("SELECT customer, cents FROM charges ORDER BY sequence")
	defer rows.Close()
	for rows.Next() {
		var customer, cents string
		_ = rows.Scan(&customer, &cents)
		fmt.Println(customer, "charged", cents)
	}
	if err := rows.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// customer-1 charged 500
	// customer-2 charged 1200
	// customer-1 charged 700
}
