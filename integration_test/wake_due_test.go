package integration_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// dueCounter is a taskpg repository that counts its reads of NextDue.
type dueCounter struct {
	*taskpg.Repository
	reads atomic.Int64
}

func (r *dueCounter) NextDue(ctx context.Context, db taskpg.DB, topic string) (time.Time, error) {
	r.reads.Add(1)
	return r.Repository.NextDue(ctx, db, topic)
}

// A Client woken by its Notifier for ready tasks polls them without reading
// when its topic's next task is due (two statements fewer per wake-up); a
// push of a deferred task wakes it through DueChannel, and it reads the due
// time then, so that the task runs at its time and not after the Client's
// pause (an hour here).
func TestAWakeUpForReadyTasksReadsNoDueTime(t *testing.T) {
	t.Parallel()
	pool := testdb.Postgres(t)
	producer, err := taskpg.New("producer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Register(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Initialize(t.Context(), pool, "t"); err != nil {
		t.Fatal(err)
	}
	inner, err := taskpg.New("consumer")
	if err != nil {
		t.Fatal(err)
	}
	repo := &dueCounter{Repository: inner}
	ran, events := wakeConsumer(t, pool, repo)
	waitFor := func(what string, ok func(taskproc.Event) bool) {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			select {
			case e := <-events:
				if ok(e) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within a minute", what)
			}
		}
	}
	// The Notifier, once it listens, wakes every topic and has it read its
	// due time (notifications may have been missed before): after that
	// wake-up's empty poll, nothing else wakes the Client.
	waitFor("the Notifier's first wake-up", func(e taskproc.Event) bool { return e.Kind == taskproc.EventWoken })
	waitFor("empty poll", func(e taskproc.Event) bool { return e.Kind == taskproc.EventEmpty })
	before := repo.reads.Load()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := producer.Push(t.Context(), pool, "t", taskapi.Append, taskapi.Creation{Identifier: id}); err != nil {
			t.Fatal(err)
		}
		if got := within(t, ran, "the ready task"); got != id {
			t.Fatalf("ran %q, want %q", got, id)
		}
		waitFor("empty poll", func(e taskproc.Event) bool { return e.Kind == taskproc.EventEmpty })
	}
	if got := repo.reads.Load(); got != before {
		t.Errorf("three wake-ups for ready tasks read the due time %d times, want none", got-before)
	}
	// Due in 3 s: a wake-up that came after the task was due would poll it
	// by the due branch alone, with no reason to read the due time (under
	// -race beside other packages, one came more than 500 ms late).
	soon := taskapi.Creation{Identifier: "later", NotBefore: time.Now().Add(3 * time.Second)}
	if _, err := producer.Push(t.Context(), pool, "t", taskapi.Append, soon); err != nil {
		t.Fatal(err)
	}
	if got := within(t, ran, "the deferred task, not after the hour's pause"); got != "later" {
		t.Fatalf("ran %q, want the deferred task", got)
	}
	if repo.reads.Load() == before {
		t.Error("the push of a deferred task was run without a read of the due time")
	}
}

// wakeConsumer starts a Client of repo on topic t, with a pause of an hour
// and taskpg's Notifier, stopped when t ends; it returns the channels of
// the identifiers of the tasks it ran and of the events it heard.
func wakeConsumer(t *testing.T, pool *pgxpool.Pool, repo taskproc.Repository[taskpg.DB]) (ran chan string, events chan taskproc.Event) {
	t.Helper()
	ran, events = make(chan string, 10), make(chan taskproc.Event, 1000)
	client, err := taskproc.New[taskpg.DB](repo, taskpg.Transact(pool), taskproc.WithPause(time.Hour),
		taskproc.WithNotifier(taskpg.NewNotifier(pool)),
		taskproc.WithObserver(taskproc.ObserverFunc(func(e taskproc.Event) {
			select {
			case events <- e:
			default:
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	err = client.Handle("t", taskproc.Sequential(func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		ran <- task.Identifier
		return taskapi.Decision{Result: taskapi.Success}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return ran, events
}

// within returns the next value of c, and fails after a minute.
func within[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}
