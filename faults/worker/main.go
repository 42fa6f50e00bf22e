// Command worker is the consumer process of the fault tests: one taskproc
// Client, an owner of its own, that processes one topic on PostgreSQL. For
// each task it records an effect row in the transaction that completes
// the task, so the tests can count how often a task's work committed. With
// -mix soak it decides each task as its input asks (see soak.go), with
// retries and snoozes. It prints "ready" once started and stops cleanly on
// SIGTERM; the tests kill it with SIGKILL to crash it. With -mix ordered
// it runs each task in a transaction of its own, an identifier's tasks in
// sequence order (see ordered.go).
//
// With -report it also prints, a line each, when a handler starts
// ("started SEQUENCES"), what the runtime told its observer (see
// report.go) and how each of its completions came out, for the tests that
// read what a process saw. -stubborn makes its handler
// ignore its context while it works, as one stuck in a call does, so that
// it always attempts its completion. -poison names an input whose task
// makes the process exit at once with status 3 (after "ready"), as a
// handler that crashes its process does. When it cannot start because the
// database is unavailable (taskapi.ErrUnavailable), it exits with status
// 75 (EX_TEMPFAIL): a supervisor starts it again. -size, -inflight,
// -pollers and -revive set the poll's size, the batches in flight at most
// (0: no limit), the topic's poll loops and whether the keeper rescues
// expired tasks (WithRevival); -leadership makes the topic exclusive under
// terms of that length; -listen gives its Notifier a URL of its own, past
// a pooler in transaction mode.
package main

import (
	"context"
	"errors"
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

// config is the worker's command line.
type config struct {
	database, topic, owner string
	listen                 string
	expiry, work           time.Duration
	mix                    string
	report, stubborn       bool
	poison                 string
	size, inflight         int
	pollers                int
	revive                 bool
	leadership             time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.database, "database", "", "PostgreSQL URL")
	flag.StringVar(&c.listen, "listen", "", "the Notifier's own URL (taskpg.WithListenURL), past a pooler in transaction mode")
	flag.StringVar(&c.topic, "topic", "", "the topic to process")
	flag.StringVar(&c.owner, "owner", "", "the owner's name")
	flag.DurationVar(&c.expiry, "expiry", 2*time.Second, "taskproc.WithExpiry")
	flag.DurationVar(&c.work, "work", 10*time.Millisecond, "how long a batch works before it completes")
	flag.StringVar(&c.mix, "mix", "effects", "how tasks are decided: effects (every task succeeds), soak (as its input asks) or ordered (task by task, an identifier's in sequence order)")
	flag.BoolVar(&c.report, "report", false, "print the runtime's events and the outcome of each completion")
	flag.BoolVar(&c.stubborn, "stubborn", false, "work on whatever the batch's context says, then complete")
	flag.StringVar(&c.poison, "poison", "", "exit with status 3 on a task with this input")
	flag.IntVar(&c.size, "size", 20, "taskproc.WithSize")
	flag.IntVar(&c.inflight, "inflight", 0, "batches in flight at most (taskproc.NewBoundedLimiter); 0: no limit")
	flag.IntVar(&c.pollers, "pollers", 1, "taskproc.WithPollers")
	flag.BoolVar(&c.revive, "revive", true, "taskproc.WithRevival")
	flag.DurationVar(&c.leadership, "leadership", 0, "taskproc.WithLeadership: the topic's term; 0 for none")
	flag.Parse()
	if err := run(c); err != nil {
		log.Printf("worker %s: %v", c.owner, err)
		if errors.Is(err, errStartUnavailable) {
			os.Exit(exitTempFail)
		}
		os.Exit(1)
	}
}

// exitTempFail is the exit status of a worker that could not start because
// the database was unavailable (sysexits.h's EX_TEMPFAIL).
const exitTempFail = 75

// errStartUnavailable marks a Start that failed on an unavailable database.
var errStartUnavailable = errors.New("the database was unavailable at start")

// started is closed once the worker printed "ready": a poison task kills
// the process only then, so that the tests see it start first.
var started = make(chan struct{})

func run(c config) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, c.database)
	if err != nil {
		return err
	}
	defer pool.Close()
	repo, err := taskpg.New(c.owner)
	if err != nil {
		return err
	}
	handler, opts := effects(c), []taskproc.ClientOption(nil)
	switch c.mix {
	case "soak":
		handler, opts = soak(c.owner, c.work), soakOptions
	case "ordered":
		handler, opts = ordered(c.owner, c.work)
	}
	opts = append(opts, taskproc.WithExpiry(c.expiry), taskproc.WithHeartbeat(c.expiry/8),
		taskproc.WithPause(20*time.Millisecond), taskproc.WithSize(c.size), taskproc.WithPollers(c.pollers),
		taskproc.WithNotifier(notifier(pool, c.listen)))
	if c.revive {
		opts = append(opts, taskproc.WithRevival())
	}
	if c.inflight > 0 {
		opts = append(opts, taskproc.WithLimiter(taskproc.NewBoundedLimiter(c.inflight)))
	}
	if c.leadership > 0 {
		opts = append(opts, taskproc.WithLeadership(c.leadership))
	}
	if c.report {
		opts = append(opts, taskproc.WithObserver(taskproc.ObserverFunc(reportEvent)))
	}
	client, err := taskproc.New(repo, taskpg.Transact(pool), opts...)
	if err != nil {
		return err
	}
	if err := client.Handle(c.topic, handler); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		if errors.Is(err, taskapi.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", errStartUnavailable, err)
		}
		return err
	}
	say("ready")
	close(started)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

// notifier is the worker's source of wake-ups: LISTEN on listen, or on the
// pool when it is empty.
func notifier(pool *pgxpool.Pool, listen string) *taskpg.Notifier {
	if listen == "" {
		return taskpg.NewNotifier(pool)
	}
	return taskpg.NewNotifier(pool, taskpg.WithListenURL(listen))
}

// effects works for a while, then records one effect row per task in the
// transaction that completes the batch.
func effects(c config) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		for _, task := range b.Tasks() {
			if c.poison != "" && task.Input == c.poison {
				<-started
				say("poison %d", task.Sequence)
				os.Exit(3)
			}
		}
		if c.report {
			say("started %s", seqs(b.Tasks()))
		}
		if c.stubborn {
			time.Sleep(c.work)
		} else {
			select {
			case <-time.After(c.work):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := taskproc.CompleteTx(b, func(ctx context.Context, tx taskpg.DB) (taskproc.Decisions, error) {
			decisions := taskproc.Decisions{}
			for _, task := range b.Tasks() {
				_, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
					task.Identifier, task.Sequence, c.owner)
				if err != nil {
					return nil, err
				}
				decisions[task] = taskapi.Decision{Result: taskapi.Success, Output: c.owner}
			}
			return decisions, nil
		})
		if c.report {
			reportCompletion(b, err)
		}
		return err
	})
}
