package integration_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A Client whose topic is at its Active limit, held by another process,
// polls once, tells its observer that the limit held the poll back, and
// waits its pause (an hour here) without polling again; the other
// process's completion frees the slot and wakes it through its Notifier,
// and it runs the next task at once. The other process is taskpg's, and
// taskansi's on the same database.
func TestACompletionWakesConsumersWaitingAtALimit(t *testing.T) {
	t.Parallel()
	t.Run("taskpg", func(t *testing.T) {
		t.Parallel()
		_, pool, _, other, _ := onePostgres(t)
		hold, free := holder[taskpg.DB](t, other, pool)
		limitWake(t, pool, hold, free)
	})
	t.Run("taskansi", func(t *testing.T) {
		t.Parallel()
		_, pool, db, _, other := onePostgres(t)
		hold, free := holder[taskansi.DB](t, other, db)
		limitWake(t, pool, hold, free)
	})
}

// holder registers repo, makes topic t with an Active limit of 1 and two
// tasks, and returns hold, which polls the first, and free, which
// completes it.
func holder[Tx any](t *testing.T, repo taskapi.Repository[Tx], db Tx) (hold, free func()) {
	ctx := t.Context()
	must[bool](t, "Register")(repo.Register(ctx, db))
	must[bool](t, "Initialize")(repo.Initialize(ctx, db, "t"))
	if err := repo.(taskapi.Regulator[Tx]).SetLimits(ctx, db, "t", taskapi.Limits{Active: 1}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "second"} {
		must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "t", taskapi.Append, taskapi.Creation{Identifier: id}))
	}
	var held []taskapi.Task
	hold = func() {
		held = must[[]taskapi.Task](t, "Poll")(repo.Poll(ctx, db, "t", 1))
		if len(held) != 1 {
			t.Fatalf("Poll took %d tasks, want 1", len(held))
		}
	}
	free = func() {
		completion := taskapi.Completion{Task: held[0], Decision: taskapi.Decision{Result: taskapi.Success}}
		if err := repo.Complete(ctx, db, "t", completion); err != nil {
			t.Fatal(err)
		}
	}
	return hold, free
}

// limitWake runs a consumer at the limit that hold takes, and checks that
// it waits, and that free wakes it.
func limitWake(t *testing.T, pool *pgxpool.Pool, hold, free func()) {
	hold()
	repo, err := taskpg.New("consumer")
	if err != nil {
		t.Fatal(err)
	}
	ran, events := wakeConsumer(t, pool, repo)
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
	free()
	if got := within(t, ran, "the next task, not after the hour's pause"); got != "second" {
		t.Fatalf("ran %q, want the second task", got)
	}
}
