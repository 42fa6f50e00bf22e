package taskpg_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// lockFirst locks the task with sequence in a transaction of its own, until
// the test ends.
func lockFirst(t *testing.T, db taskpg.DB, sequence int64) {
	t.Helper()
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), `SELECT FROM public.task WHERE sequence = $1 FOR UPDATE`, sequence); err != nil {
		t.Fatal(err)
	}
}

func TestPollSkipsLockedRows(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	tasks := push(t, repo, db, "t", taskapi.Append, ids("x", "y")...)
	lockFirst(t, db, tasks[0].Sequence)
	if got := poll(t, repo, db, "t", 2); len(got) != 1 || got[0] != tasks[1] {
		t.Fatalf("Poll = %v, want %v", got, tasks[1:])
	}
}

func TestExclusiveWaitsForLockedRows(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, "t")
	repo := newRepo(t, db, "e", taskpg.WithExclusive())
	tasks := push(t, repo, db, "t", taskapi.Append, ids("x", "y")...)
	lockFirst(t, db, tasks[0].Sequence)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	got, err := repo.Poll(ctx, db, "t", 2)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive Poll of a locked row = %v, %v; want it to wait", got, err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = repo.Push(ctx, db, "t", taskapi.Replace, ids("x")...)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive Replace of a locked row = %v; want it to wait", err)
	}
}

// otherDB is a DB that is none of pgx's own types, as a wrapper that traces
// or counts calls would be: conditional polls then take the general path.
type otherDB struct{ taskpg.DB }

// Conditional pollers, FIFO and LIFO, never hold two tasks of one identifier
// at once, and all of them get processed.
func TestConditionalPollersNeverShareAnIdentifier(t *testing.T) {
	t.Parallel()
	for name, handle := range map[string]func(*pgxpool.Pool) taskpg.DB{
		"pool":     func(p *pgxpool.Pool) taskpg.DB { return p },
		"other DB": func(p *pgxpool.Pool) taskpg.DB { return otherDB{p} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool, repo := setup(t, "t")
			conditionalPollers(t, handle(pool), repo)
		})
	}
}

func conditionalPollers(t *testing.T, db taskpg.DB, repo *taskpg.Repository) {
	t.Helper()
	const identifiers, perIdentifier, workers = 8, 25, 8
	var creations []taskapi.Creation
	for i := range identifiers * perIdentifier {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprint("id", i%identifiers)})
	}
	push(t, repo, db, "t", taskapi.Append, creations...)
	var (
		mu       sync.Mutex
		busy     = map[string]bool{}
		done     atomic.Int64
		wg       sync.WaitGroup
		failures = make(chan error, workers)
	)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for w := range workers {
		worker := newRepo(t, db, fmt.Sprint("w", w))
		wg.Go(func() {
			for done.Load() < int64(len(creations)) && ctx.Err() == nil {
				order := []taskapi.Order{taskapi.FIFO, taskapi.LIFO}[rand.IntN(2)]
				tasks, err := worker.Poll(ctx, db, "t", 3, order, taskapi.SingularByIdentifier)
				if err == nil {
					err = process(ctx, worker, db, tasks, &mu, busy)
				}
				if err != nil {
					failures <- err
					cancel()
					return
				}
				done.Add(int64(len(tasks)))
			}
		})
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	if n := done.Load(); n != int64(len(creations)) {
		t.Fatalf("processed %d tasks of %d", n, len(creations))
	}
}

// process marks the identifiers of tasks busy, fails if one already is, and
// completes the tasks after unmarking them (so that a later poll can never
// see a mark of a completed task).
func process(ctx context.Context, repo *taskpg.Repository, db taskpg.DB, tasks []taskapi.Task, mu *sync.Mutex, busy map[string]bool) error {
	mu.Lock()
	for _, task := range tasks {
		if busy[task.Identifier] {
			mu.Unlock()
			return fmt.Errorf("identifier %q polled twice at once", task.Identifier)
		}
		busy[task.Identifier] = true
	}
	mu.Unlock()
	time.Sleep(time.Millisecond)
	completions := make([]taskapi.Completion, len(tasks))
	mu.Lock()
	for i, task := range tasks {
		delete(busy, task.Identifier)
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	mu.Unlock()
	return repo.Complete(ctx, db, "t", completions...)
}
