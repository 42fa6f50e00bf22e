package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A Client whose topic is at its Active limit, held by another process,
// polls once, tells its listener that the limit held the poll back, and
// waits its pause (an hour here) without polling again; the
// other process's completion frees the slot and wakes it through its
// Notifier, and it runs the next task at once.
func TestACompletionWakesConsumersWaitingAtALimit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Postgres(t)
	other, err := taskpg.New("other-process")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Register(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Initialize(ctx, pool, "t"); err != nil {
		t.Fatal(err)
	}
	if err := other.SetLimits(ctx, pool, "t", taskapi.Limits{Active: 1}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "second"} {
		if _, err := other.Push(ctx, pool, "t", taskapi.Append, taskapi.Creation{Identifier: id}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := other.Poll(ctx, pool, "t", 1)
	if err != nil || len(held) != 1 {
		t.Fatalf("Poll = %v, %v", held, err)
	}
	repo, err := taskpg.New("consumer")
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 10)
	events := make(chan taskproc.Event, 1000)
	client, err := taskproc.New[taskpg.DB](repo, taskpg.Transact(pool), taskproc.WithPause(time.Hour),
		taskproc.WithNotifier(taskpg.NewNotifier(pool)),
		taskproc.WithListener(taskproc.ListenerFunc(func(e taskproc.Event) {
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
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := client.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	// The Notifier's first wake-up (once it listens) and its empty poll,
	// which the limit held back.
	for _, kind := range []taskproc.EventKind{taskproc.EventWoken, taskproc.EventLimited, taskproc.EventEmpty} {
		for e := within(t, events, kind.String()); e.Kind != kind; e = within(t, events, kind.String()) {
		}
	}
	// A loop that polled again at the limit, rather than wait its pause,
	// would show a poll every round trip here. One is allowed: the
	// Notifier's wake-up may have come while the first poll ran.
	time.Sleep(300 * time.Millisecond)
	polls := 0
	for len(events) > 0 {
		if e := <-events; e.Kind == taskproc.EventEmpty || e.Kind == taskproc.EventPolled {
			polls++
		}
	}
	if polls > 1 {
		t.Fatalf("the consumer polled %d times more while the topic stayed at its limit", polls)
	}
	completion := taskapi.Completion{Task: held[0], Decision: taskapi.Decision{Result: taskapi.Success}}
	if err := other.Complete(ctx, pool, "t", completion); err != nil {
		t.Fatal(err)
	}
	if got := within(t, ran, "the next task, not after the hour's pause"); got != "second" {
		t.Fatalf("ran %q, want the second task", got)
	}
}
