// Command worker is the consumer process of the fault tests: one taskproc
// Client, an owner of its own, that processes one topic on PostgreSQL. For
// each task it records an effect row in the transaction that completes
// the task, so the tests can count how often a task's work committed. With
// -mix soak it decides each task as its input asks (see soak.go), with
// retries and snoozes. It prints "ready" once started and stops cleanly on
// SIGTERM; the tests kill it with SIGKILL to crash it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

func main() {
	database := flag.String("database", "", "PostgreSQL URL")
	topic := flag.String("topic", "", "the topic to process")
	owner := flag.String("owner", "", "the owner's name")
	expiry := flag.Duration("expiry", 2*time.Second, "taskproc.WithExpiry")
	work := flag.Duration("work", 10*time.Millisecond, "how long a batch works before it completes")
	mix := flag.String("mix", "effects", "how tasks are decided: effects (every task succeeds) or soak (as its input asks)")
	flag.Parse()
	if err := run(*database, *topic, *owner, *expiry, *work, *mix); err != nil {
		log.Fatalf("worker %s: %v", *owner, err)
	}
}

func run(database, topic, owner string, expiry, work time.Duration, mix string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, database)
	if err != nil {
		return err
	}
	defer pool.Close()
	repo, err := taskpg.New(owner)
	if err != nil {
		return err
	}
	handler, opts := effects(owner, work), []taskproc.Option(nil)
	if mix == "soak" {
		handler, opts = soak(owner, work), soakOptions
	}
	client, err := taskproc.New(repo, taskpg.Transact(pool), append([]taskproc.Option{
		taskproc.WithExpiry(expiry), taskproc.WithRevival(), taskproc.WithHeartbeat(expiry / 8),
		taskproc.WithPause(20 * time.Millisecond), taskproc.WithSize(20),
		taskproc.WithNotifier(taskpg.NewNotifier(pool))}, opts...)...)
	if err != nil {
		return err
	}
	if err := client.Handle(topic, handler); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

// effects works for a while, then records one effect row per task in the
// transaction that completes the batch.
func effects(owner string, work time.Duration) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		select {
		case <-time.After(work):
		case <-ctx.Done():
			return ctx.Err()
		}
		return taskproc.CompleteTx(b, func(ctx context.Context, tx taskpg.DB) (taskproc.Decisions, error) {
			decisions := taskproc.Decisions{}
			for _, task := range b.Tasks() {
				_, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
					task.Identifier, task.Sequence, owner)
				if err != nil {
					return nil, err
				}
				decisions[task] = taskapi.Decision{Result: taskapi.Success, Output: owner}
			}
			return decisions, nil
		})
	})
}
