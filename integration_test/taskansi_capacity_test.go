package integration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The conformance suite checks the capacity of topics through one package
// and one repository that set it. The tests below check what it cannot:
// that taskpg and taskansi admit against one capacity on one PostgreSQL
// database, and that on MySQL pushes by repositories that did not set the
// capacity find it, and take their turns (see taskansi's lockTopic).

// pusher pushes n tasks into a topic: one producer of fillConcurrently.
type pusher func(ctx context.Context, n int) error

// fillConcurrently runs the producers at once, each pushing one to three
// tasks at a time until a capacity refused it three times, and returns how
// many tasks they pushed. Conflicts are taken as refusals of no count.
func fillConcurrently(t *testing.T, producers ...pusher) int64 {
	t.Helper()
	var (
		admitted atomic.Int64
		wg       sync.WaitGroup
	)
	for p, push := range producers {
		wg.Go(func() {
			for i, refused := 0, 0; refused < 3 && !t.Failed(); i++ {
				n := 1 + (p+i)%3
				switch err := push(t.Context(), n); {
				case errors.Is(err, taskapi.ErrOverCapacity):
					refused++
				case errors.Is(err, taskapi.ErrConflict):
				case err != nil:
					t.Errorf("producer %d: %v", p, err)
				default:
					admitted.Add(int64(n))
				}
			}
		})
	}
	wg.Wait()
	return admitted.Load()
}

// wantFilled fails t unless the topic holds ready Ready tasks, as many as
// were admitted, at most capacity and at least capacity-2 (the producers
// push up to three at a time).
func wantFilled(t *testing.T, ready, admitted, capacity int64) {
	t.Helper()
	if ready > capacity || ready != admitted || ready < capacity-2 {
		t.Fatalf("%d Ready tasks after %d admitted, want them equal, at most %d and at least %d",
			ready, admitted, capacity, capacity-2)
	}
}

// readyOf counts the Ready tasks of topic.
func readyOf(t *testing.T, count func() (map[string]map[taskapi.State]taskapi.Summary, error), topic string) int64 {
	t.Helper()
	counts, err := count()
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return counts[topic][taskapi.Ready].Count
}

func TestTaskpgAndTaskansiShareCapacities(t *testing.T) {
	t.Parallel()
	ctx, pool, db, pg, ansi := onePostgres(t)
	must[bool](t, "Initialize")(ansi.Initialize(ctx, db, "t"))

	// Set by one, read by the other; a push of either is admitted.
	must[struct{}](t, "SetCapacity by taskpg")(struct{}{}, pg.SetCapacity(ctx, pool, "t", taskapi.Capacity{Ready: 2}))
	if got := must[map[string]taskapi.Capacity](t, "Capacities by taskansi")(ansi.Capacities(ctx, db)); got["t"] != (taskapi.Capacity{Ready: 2}) || len(got) != 1 {
		t.Fatalf("taskansi Capacities = %v, want map[t:2]", got)
	}
	must[[]taskapi.Task](t, "Push by taskansi")(ansi.Push(ctx, db, "t", taskapi.Append, creations(2, 2)...))
	_, err := pg.Push(ctx, pool, "t", taskapi.Append, creations(1, 1)...)
	var ce *taskapi.CapacityError
	if !errors.As(err, &ce) || *ce != (taskapi.CapacityError{Topic: "t", Capacity: 2, Count: 3}) {
		t.Fatalf("Push by taskpg over taskansi's tasks: error = %v, want a CapacityError of count 3", err)
	}
	must[struct{}](t, "PurgeAll")(struct{}{}, ansi.PurgeAll(ctx, db, "t"))

	// Producers of both packages, each with repositories of its own, fill
	// one capacity together.
	const capacity = 300
	must[struct{}](t, "SetCapacity by taskansi")(struct{}{}, ansi.SetCapacity(ctx, db, "t", taskapi.Capacity{Ready: capacity}))
	var producers []pusher
	for p := range 8 {
		owner := fmt.Sprintf("producer-%d", p)
		if p%2 == 0 {
			repo := must[*taskpg.Repository](t, "taskpg.New")(taskpg.New(owner))
			producers = append(producers, func(ctx context.Context, n int) error {
				_, err := repo.Push(ctx, pool, "t", taskapi.Append, creations(n, n)...)
				return err
			})
			continue
		}
		repo := must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.Postgres, owner))
		producers = append(producers, func(ctx context.Context, n int) error {
			_, err := repo.Push(ctx, db, "t", taskapi.Append, creations(n, n)...)
			return err
		})
	}
	admitted := fillConcurrently(t, producers...)
	wantFilled(t, readyOf(t, func() (map[string]map[taskapi.State]taskapi.Summary, error) {
		return pg.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: "t"}, taskapi.Unbounded)
	}, "t"), admitted, capacity)

	// Removed by taskansi: taskpg pushes freely again.
	must[struct{}](t, "SetCapacity(0) by taskansi")(struct{}{}, ansi.SetCapacity(ctx, db, "t", taskapi.Capacity{}))
	must[[]taskapi.Task](t, "Push by taskpg")(pg.Push(ctx, pool, "t", taskapi.Append, creations(10, 10)...))
	if got := must[map[string]taskapi.Capacity](t, "Capacities by taskpg")(pg.Capacities(ctx, pool)); len(got) != 0 {
		t.Fatalf("taskpg Capacities = %v, want none", got)
	}
}

// TestTaskansiMySQLCapacityFoundByPushes fills a topic whose capacity one
// repository set with producers that each have a repository of their own,
// which learn of the capacity on their first push: their shared locks on
// the topic's row are raised to exclusive ones, which may deadlock (a
// conflict, retried) but never lets two counts miss each other's tasks.
func TestTaskansiMySQLCapacityFoundByPushes(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), testdb.MySQL(t)
	setter := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.MySQL, "setter"))
	must[bool](t, "Initialize")(setter.Initialize(ctx, db, "t"))
	const capacity = 300
	must[struct{}](t, "SetCapacity")(struct{}{}, setter.SetCapacity(ctx, db, "t", taskapi.Capacity{Ready: capacity}))
	producers := make([]pusher, 16)
	for p := range producers {
		repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.MySQL, fmt.Sprintf("producer-%d", p)))
		producers[p] = func(ctx context.Context, n int) error {
			_, err := repo.Push(ctx, db, "t", taskapi.Append, creations(n, n)...)
			return err
		}
	}
	admitted := fillConcurrently(t, producers...)
	wantFilled(t, readyOf(t, func() (map[string]map[taskapi.State]taskapi.Summary, error) {
		return setter.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: "t"}, taskapi.Unbounded)
	}, "t"), admitted, capacity)
}
