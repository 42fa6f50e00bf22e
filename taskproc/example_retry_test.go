package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A handler whose calls fail transiently: the task comes back after the
// policy's backoff until its third attempt, and its output logs each
// failure.
func ExampleTransient() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()

	repo, _ := taskansi.New(taskansi.SQLite, "worker-1")
	_, _ = repo.Register(ctx, db) // a Client would; a Manager alone needs its owner registered
	_, _ = repo.Initialize(ctx, db, "charges")
	pushed, _ := repo.Push(ctx, db, "charges", taskapi.Append, taskapi.Creation{Identifier: "order-9"})

	m, err := taskproc.NewManager(repo, taskansi.Transact(db, nil), "charges",
		taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			return taskapi.Decision{}, taskproc.Transient(errors.New("payment service unavailable"))
		}),
		taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}))
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		log.Fatal(err)
	}
	var info taskapi.Info
	for deadline := time.Now().Add(time.Minute); info.State != taskapi.Failed && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		info, _, _ = repo.Lookup(ctx, db, "charges", pushed[0].Sequence)
	}
	_ = m.Stop(ctx)
	attempts, _ := taskproc.Attempts(info.Output)
	for _, a := range attempts {
		fmt.Println("attempt", a.Number, "failed:", a.Error)
	}
	fmt.Println(info.State, "after", info.Revivals, "retries")
	// Output:
	// attempt 1 failed: payment service unavailable
	// attempt 2 failed: payment service unavailable
	// attempt 3 failed: payment service unavailable
	// FAILED after 2 retries
}

// A schedule that pushes one task per hour, however many processes run
// it. The clock stands still here, so that the example prints the same
// period every time.
func ExampleWithSchedule() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()

	repo, _ := taskansi.New(taskansi.SQLite, "reporter-1")
	_, _ = repo.Register(ctx, db)
	_, _ = repo.Initialize(ctx, db, "reports")
	done := make(chan taskapi.Task, 1)
	m, err := taskproc.NewManager(repo, taskansi.Transact(db, nil), "reports",
		taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			done <- task
			return taskapi.Decision{Result: taskapi.Success}, nil
		}),
		taskproc.WithSchedule(taskproc.Schedule{Name: "hourly", Every: time.Hour, Task: taskapi.Creation{Identifier: "usage-report"}}),
		taskproc.WithClock(func() time.Time { return time.Date(2026, 11, 25, 14, 42, 0, 0, time.UTC) }))
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		log.Fatal(err)
	}
	task := <-done
	_ = m.Stop(ctx)
	info, _, _ := repo.Lookup(ctx, db, "reports", task.Sequence)
	fmt.Println(info.Identifier, "for the period of", info.Reference)
	mark, _ := repo.Mark(ctx, db, "reports", "hourly")
	fmt.Println("mark:", mark.Format(time.RFC3339))
	// Output:
	// usage-report for the period of 2026-11-25T14:00:00Z
	// mark: 2026-11-25T14:00:00Z
}
