package taskpg_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// A producer pushes a task inside its own transaction; a consumer polls it
// and completes it.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")) // migrated with migrations.Up
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	repo, err := taskpg.New("worker-1")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := repo.Register(ctx, pool); err != nil {
		log.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, pool, "mail"); err != nil {
		log.Fatal(err)
	}

	// Producer: the task commits together with the rest of the transaction.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := repo.Push(ctx, tx, "mail", taskapi.Replace,
			taskapi.Creation{Identifier: "user-42", Input: `{"template":"welcome"}`})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// Consumer: one identifier is never processed twice at once.
	tasks, err := repo.Poll(ctx, pool, "mail", 10, taskapi.SingularByIdentifier)
	if err != nil {
		log.Fatal(err)
	}
	for _, task := range tasks {
		fmt.Println("sending", task.Input, "to", task.Identifier)
		decision := taskapi.Decision{Result: taskapi.Success}
		if err := repo.Complete(ctx, pool, "mail", taskapi.Completion{Task: task, Decision: decision}); err != nil {
			log.Fatal(err)
		}
	}
}

// A service bounds the backlog of a tenant's topic: a push that would leave
// more than 1,000 Ready tasks fails, and the caller is turned away.
func ExampleRepository_SetCapacity() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")) // migrated with migrations.Up
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	repo, err := taskpg.New("api-1")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, pool, "tenant-acme"); err != nil {
		log.Fatal(err)
	}
	if err := repo.SetCapacity(ctx, pool, "tenant-acme", taskapi.Capacity{Ready: 1000}); err != nil {
		log.Fatal(err)
	}

	_, err = repo.Push(ctx, pool, "tenant-acme", taskapi.Append, taskapi.Creation{Identifier: "report-7"})
	var full *taskapi.CapacityError
	switch {
	case errors.As(err, &full):
		fmt.Printf("busy: %s is full (%d tasks); try again later\n", full.Topic, full.Capacity)
	case err != nil:
		log.Fatal(err)
	}
}
