package taskpg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// floorTopic sets up topic "plan" (planSetup) with its floor's constants
// changed: a poll starts from the floor after streak tasks, and polls from
// the index's start come only when a poll from the floor took nothing
// (every: an hour), which the tests then depend on.
func floorTopic(t *testing.T, streak int) (*pgxpool.Pool, *Repository) {
	t.Helper()
	db := testdb.Postgres(t)
	repo := planSetup(t, db)
	repo.floorStreak, repo.floorEvery = streak, time.Hour
	return db, repo
}

// pushN pushes n tasks to "plan" on db, their identifiers prefixed.
func pushN(t *testing.T, db DB, repo *Repository, prefix string, n int) []int64 {
	t.Helper()
	var sequences []int64
	for first := 0; first < n; first += 1000 {
		creations := make([]taskapi.Creation, min(1000, n-first))
		for i := range creations {
			creations[i] = taskapi.Creation{Identifier: fmt.Sprint(prefix, first+i), Input: "in"}
		}
		pushed, err := repo.Push(t.Context(), db, "plan", taskapi.Append, creations...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pushed {
			sequences = append(sequences, p.Sequence)
		}
	}
	return sequences
}

// pollAndComplete polls up to size tasks of "plan" on db and completes
// them, and returns them.
func pollAndComplete(t *testing.T, db DB, repo *Repository, size int) []taskapi.Task {
	t.Helper()
	tasks, err := repo.Poll(t.Context(), db, "plan", size)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) > 0 {
		if err := repo.Complete(t.Context(), db, "plan", successes(tasks)...); err != nil {
			t.Fatal(err)
		}
	}
	return tasks
}

// successes returns the completions of tasks, each a success.
func successes(tasks []taskapi.Task) []taskapi.Completion {
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	return completions
}

// readyIndexPages returns the pages of the partition's index of Ready tasks
// that the server's statistics counted so far, once conn's backend has
// reported its own.
func readyIndexPages(t *testing.T, db *pgxpool.Pool, conn *pgx.Conn) int64 {
	t.Helper()
	ctx := t.Context()
	// The backend reports its counts when it next goes idle.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	var pages int64
	err := db.QueryRow(ctx, `
SELECT coalesce(sum(idx_blks_hit + idx_blks_read), 0) FROM pg_catalog.pg_statio_user_indexes
WHERE relname = $1 AND indexrelname LIKE '%topic_sequence_idx'`, partitionName("plan")).Scan(&pages)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// A consumer that keeps taking tasks starts its polls past the index
// entries of the tasks it took, which stay until a vacuum (planSetup keeps
// autovacuum off): its polls read a few pages of the index of Ready tasks,
// not every page of the tasks consumed before. Until other transactions on
// the server end, the floor cannot rise, so the test polls on until one
// poll reads few pages.
func TestABusyConsumersPollsSkipTheTasksItTook(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := floorTopic(t, floorStreak)
	const consumed, polls, size, fewPages = 30_000, 200, 100, 20
	pushN(t, db, repo, "id-", consumed+polls*size)
	for range consumed / 500 {
		pollAndComplete(t, db, repo, 500)
	}
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	least := int64(-1)
	for range polls {
		before := readyIndexPages(t, db, conn.Conn())
		if tasks := pollAndComplete(t, conn.Conn(), repo, size); len(tasks) != size {
			t.Fatalf("Poll took %d tasks, want %d", len(tasks), size)
		}
		pages := readyIndexPages(t, db, conn.Conn()) - before
		if least < 0 || pages < least {
			least = pages
		}
		if least <= fewPages {
			return
		}
		time.Sleep(10 * time.Millisecond) // for the transactions open elsewhere to end
	}
	t.Errorf("every poll of %d after %d consumed tasks read at least %d pages of the Ready index, want at most %d",
		size, consumed, least, fewPages)
}

// A push that is open while the consumer takes newer tasks keeps the floor
// below its own: once it commits, the next poll takes its tasks first.
func TestAFloorWaitsForThePushesOpenBelowIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := floorTopic(t, 1)
	pushN(t, db, repo, "before-", 50)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	held := pushN(t, tx, repo, "held-", 10)
	pushN(t, db, repo, "after-", 100)
	for range 10 { // takes the 150 tasks around the open push
		if tasks := pollAndComplete(t, db, repo, 15); len(tasks) != 15 {
			t.Fatalf("Poll took %d tasks, want 15", len(tasks))
		}
	}
	pushN(t, db, repo, "later-", 10)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tasks := pollAndComplete(t, db, repo, 10)
	if len(tasks) != 10 || tasks[0].Sequence != held[0] || tasks[9].Sequence != held[9] {
		t.Fatalf("after the open push committed, Poll took %v, want its tasks %d to %d", tasks, held[0], held[9])
	}
}

// A task that comes back to Ready below the floor is polled: through the
// repository itself at once (Release), and through another process's
// Release or a caller's plain INSERT of a sequence drawn long before, once
// the polls from the floor run dry.
func TestTasksBackBelowTheFloorArePolled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := floorTopic(t, 1)
	other, err := New("other process")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Register(ctx, db); err != nil {
		t.Fatal(err)
	}
	var drawn int64
	if err := db.QueryRow(ctx, "SELECT nextval('public.task_sequence')").Scan(&drawn); err != nil {
		t.Fatal(err)
	}
	pushN(t, db, repo, "id-", 5000)
	elsewhere, err := other.Poll(ctx, db, "plan", 1)
	if err != nil || len(elsewhere) != 1 {
		t.Fatalf("the other process's Poll: %v, %v", elsewhere, err)
	}
	mine, err := repo.Poll(ctx, db, "plan", 1)
	if err != nil || len(mine) != 1 {
		t.Fatalf("Poll: %v, %v", mine, err)
	}
	// The floor rises once no transaction on the server is open from
	// before the polls.
	deadline := time.Now().Add(time.Minute)
	for repo.floorOf("plan").start(time.Now(), 1, time.Hour) <= mine[0].Sequence {
		if time.Now().After(deadline) {
			t.Fatal("the floor stayed below the tasks taken for a minute")
		}
		pollAndComplete(t, db, repo, 1)
		time.Sleep(10 * time.Millisecond)
	}
	if err := repo.Release(ctx, db, "plan", mine...); err != nil {
		t.Fatal(err)
	}
	if first := pollAndComplete(t, db, repo, 10); first[0].Sequence != mine[0].Sequence {
		t.Fatalf("after Release, Poll took %v first, want the released task %d", first[0], mine[0].Sequence)
	}
	if err := other.Release(ctx, db, "plan", elsewhere...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO public.task (topic, sequence, identifier) VALUES ('plan', $1, 'late')`, drawn); err != nil {
		t.Fatal(err)
	}
	taken := map[int64]int{}
	for {
		tasks := pollAndComplete(t, db, repo, 100)
		if len(tasks) == 0 {
			break
		}
		for _, task := range tasks {
			taken[task.Sequence]++
		}
	}
	for _, s := range []int64{elsewhere[0].Sequence, drawn} {
		if taken[s] != 1 {
			t.Errorf("task %d was polled %d times before the topic ran dry, want once", s, taken[s])
		}
	}
}

// Producers that hold their transactions open for a while, consumers of one
// repository that poll from its floor, and another process that takes
// tasks and gives them back: every task is completed exactly once.
func TestFloorsAccountForEveryTaskUnderLoad(t *testing.T) {
	ctx := t.Context()
	db, repo := floorTopic(t, 50)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // not parallel: the goroutines are this test's alone
	repo.floorEvery = 20 * time.Millisecond
	other, err := New("other process")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Register(ctx, db); err != nil {
		t.Fatal(err)
	}
	const producers, pushes, perPush, consumers = 4, 50, 25, 3
	total := producers * pushes * perPush
	var (
		mu        sync.Mutex
		completed = map[int64]int{}
		wg        sync.WaitGroup
		pushing   sync.WaitGroup
		errs      = make(chan error, producers+consumers+1)
	)
	for p := range producers {
		pushing.Add(1)
		wg.Go(func() {
			defer pushing.Done()
			errs <- produce(ctx, db, repo, p, pushes, perPush)
		})
	}
	done := make(chan struct{})
	wg.Go(func() { errs <- giveBack(ctx, db, other, done) })
	for range consumers {
		wg.Go(func() {
			errs <- consumeUntil(ctx, db, repo, done, func(tasks []taskapi.Task) {
				mu.Lock()
				defer mu.Unlock()
				for _, task := range tasks {
					completed[task.Sequence]++
				}
				if len(completed) == total {
					select {
					case <-done:
					default:
						close(done)
					}
				}
			})
		})
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		mu.Lock()
		t.Errorf("%d of %d tasks completed after 3 minutes", len(completed), total)
		mu.Unlock()
		close(done)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for s, n := range completed {
		if n != 1 {
			t.Errorf("task %d completed %d times", s, n)
		}
	}
}

// produce pushes pushes times perPush tasks, each push in a transaction
// that it holds open for up to 20 ms.
func produce(ctx context.Context, db *pgxpool.Pool, repo *Repository, p, pushes, perPush int) error {
	for i := range pushes {
		creations := make([]taskapi.Creation, perPush)
		for j := range creations {
			creations[j] = taskapi.Creation{Identifier: fmt.Sprint("p", p, "-", i, "-", j)}
		}
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if _, err := repo.Push(ctx, tx, "plan", taskapi.Append, creations...); err != nil {
				return err
			}
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// consumeUntil polls and completes tasks until done, handing each batch to
// record.
func consumeUntil(ctx context.Context, db *pgxpool.Pool, repo *Repository, done chan struct{}, record func([]taskapi.Task)) error {
	for {
		select {
		case <-done:
			return nil
		default:
		}
		tasks, err := repo.Poll(ctx, db, "plan", 40)
		if err != nil {
			return err
		}
		if len(tasks) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		if err := repo.Complete(ctx, db, "plan", successes(tasks)...); err != nil {
			return err
		}
		record(tasks)
	}
}

// giveBack takes a few tasks now and then, as another process would, and
// releases them, back to Ready with their sequences, until done.
func giveBack(ctx context.Context, db *pgxpool.Pool, other *Repository, done chan struct{}) error {
	for {
		select {
		case <-done:
			return nil
		case <-time.After(5 * time.Millisecond):
		}
		tasks, err := other.Poll(ctx, db, "plan", 3)
		if err != nil {
			return err
		}
		if len(tasks) > 0 {
			if err := other.Release(ctx, db, "plan", tasks...); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
		}
	}
}
