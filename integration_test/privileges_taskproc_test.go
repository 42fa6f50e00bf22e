package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// TestTaskprocAsApplicationRole runs the runtime with every part switched
// on (keeper with expiry, revival and owner purge, leadership, wake-ups,
// retries, a schedule, activation) as the application role or user with
// only the grants README lists, on a database the administrator migrated:
// no part of taskproc needs more rights, and none runs DDL of its own.
func TestTaskprocAsApplicationRole(t *testing.T) {
	t.Run("taskpg", func(t *testing.T) {
		t.Parallel()
		pool, err := pgxpool.New(t.Context(), applicationRoleURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		runtimeAsApplication(t, func(owner string) (appRepository[taskpg.DB], error) { return taskpg.New(owner) },
			taskpg.Transact(pool), taskpg.DB(pool), taskpg.NewNotifier(pool))
	})
	t.Run("taskansi MySQL", func(t *testing.T) {
		t.Parallel()
		db := mysqlApplicationDB(t)
		runtimeAsApplication(t, func(owner string) (appRepository[taskansi.DB], error) {
			return taskansi.New(taskansi.MySQL, owner)
		}, taskansi.Transact(db, readCommitted), taskansi.DB(db), taskansi.NewPollNotifier(50*time.Millisecond))
	})
}

// readCommitted is the isolation README asks of the runtime's
// transactions on MySQL.
var readCommitted = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// appRepository is both what a producer calls and what the runtime needs.
type appRepository[Tx any] interface {
	taskapi.Repository[Tx]
	taskproc.Repository[Tx]
}

// appTasks is how many tasks the application role's runtime processes;
// every tenth fails transiently once.
const appTasks = 200

func runtimeAsApplication[Tx any](t *testing.T, newRepo func(string) (appRepository[Tx], error), transact taskproc.Transact[Tx], db Tx, notifier taskproc.Notifier) {
	ctx := t.Context()
	const topic = "app-runtime"
	producer, err := newRepo("app-producer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Initialize(ctx, db, topic); err != nil {
		t.Fatal(err)
	}
	creations := make([]taskapi.Creation, appTasks)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("task-%d", i)}
	}
	if _, err := producer.Push(ctx, db, topic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
	failures := &eventErrors{}
	client := appClient(t, newRepo, transact, notifier, failures)
	if err := client.Handle(topic, taskproc.Sequential(flakyOnce()), taskproc.WithSchedule(taskproc.Schedule{
		Name: "hourly", Every: time.Hour, Task: taskapi.Creation{Identifier: "hourly"},
	})); err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	if err := client.SetActivation(ctx, topic, taskapi.Paused); err != nil {
		t.Fatal(err)
	}
	if err := client.SetActivation(ctx, topic, taskapi.Running); err != nil {
		t.Fatal(err)
	}
	awaitSucceeded(t, producer, db, topic, appTasks+1) // and the schedule's task
	if err := failures.err(); err != nil {
		t.Errorf("a part of the runtime failed as the application role: %v", err)
	}
}

// appClient is a Client with every part of the runtime switched on.
func appClient[Tx any](t *testing.T, newRepo func(string) (appRepository[Tx], error), transact taskproc.Transact[Tx], notifier taskproc.Notifier, l taskproc.Observer) *taskproc.Client[Tx] {
	repo, err := newRepo("app-consumer")
	if err != nil {
		t.Fatal(err)
	}
	client, err := taskproc.New(repo, transact,
		taskproc.WithExpiry(2*time.Second), taskproc.WithRevival(), taskproc.WithOwnerPurge(time.Minute),
		taskproc.WithHeartbeat(250*time.Millisecond), taskproc.WithLeadership(3*time.Second),
		taskproc.WithNotifier(notifier), taskproc.WithPause(20*time.Millisecond), taskproc.WithObserver(l),
		taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }}))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// flakyOnce succeeds, except that every tenth task fails transiently on
// its first attempt.
func flakyOnce() taskproc.TaskFunc {
	var seen sync.Map
	return func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		if _, again := seen.LoadOrStore(task.Identifier, true); !again && strings.HasSuffix(task.Identifier, "0") {
			return taskapi.Decision{}, taskproc.Transient(errors.New("flaky"))
		}
		return taskapi.Decision{Result: taskapi.Success}, nil
	}
}

func awaitSucceeded[Tx any](t *testing.T, repo taskapi.Repository[Tx], db Tx, topic string, want int64) {
	deadline := time.Now().Add(time.Minute)
	for {
		counts, err := repo.Count(t.Context(), db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		if counts[topic][taskapi.Succeeded].Count == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks per state after a minute: %v, want %d SUCCEEDED", counts[topic], want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventErrors keeps the errors of the events that report a failing part
// of the runtime.
type eventErrors struct {
	mu   sync.Mutex
	errs []error
}

func (e *eventErrors) Observe(ev taskproc.Event) {
	switch ev.Kind {
	case taskproc.EventPollFailed, taskproc.EventHeartbeatFailed, taskproc.EventMaintenanceFailed,
		taskproc.EventReconcileFailed, taskproc.EventNotifierLost, taskproc.EventScheduleFailed, taskproc.EventFatal:
		e.mu.Lock()
		defer e.mu.Unlock()
		e.errs = append(e.errs, fmt.Errorf("%v: %w", ev.Kind, ev.Err))
	}
}

func (e *eventErrors) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}
