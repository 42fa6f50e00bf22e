package integration_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A consumer whose Notifier goes through a pooler in transaction mode, with
// no listen URL, is told once that it hears nothing (EventNotifierLost with
// taskpg.ErrNotListening), and finds its tasks by polling.
func TestADeafNotifierIsToldOnceAndTheConsumerPolls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Pool(t, testdb.PgBouncerURL(t, testdb.PostgresURL(t)), 8)
	repo := must[*taskpg.Repository](t, "taskpg.New")(taskpg.New("consumer"))
	must[bool](t, "Initialize")(repo.Initialize(ctx, pool, "t"))
	var mu sync.Mutex
	var lost []error
	told := make(chan struct{}, 1)
	observer := taskproc.ObserverFunc(func(e taskproc.Event) {
		if e.Kind != taskproc.EventNotifierLost {
			return
		}
		mu.Lock()
		lost = append(lost, e.Err)
		mu.Unlock()
		select {
		case told <- struct{}{}:
		default:
		}
	})
	done := make(chan taskapi.Task, 10)
	client := must[*taskproc.Client[taskpg.DB]](t, "taskproc.New")(taskproc.New[taskpg.DB](repo, taskpg.Transact(pool),
		taskproc.WithNotifier(taskpg.NewNotifier(pool, taskpg.WithPingInterval(200*time.Millisecond))),
		taskproc.WithPause(100*time.Millisecond), taskproc.WithObserver(observer)))
	err := client.Handle("t", taskproc.Sequential(func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		done <- task
		return taskapi.Decision{Result: taskapi.Success}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	within(t, told, "EventNotifierLost")
	must[[]taskapi.Task](t, "Push")(repo.Push(ctx, pool, "t", taskapi.Append,
		taskapi.Creation{Identifier: "a"}, taskapi.Creation{Identifier: "b"}))
	within(t, done, "first task")
	within(t, done, "second task")
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 1 || !errors.Is(lost[0], taskpg.ErrNotListening) {
		t.Fatalf("EventNotifierLost with %v, want once with ErrNotListening", lost)
	}
}
