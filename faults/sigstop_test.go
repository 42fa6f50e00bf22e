package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const (
	stopTopic  = "stopped"
	stopTasks  = 5
	stopExpiry = 2 * time.Second
	// stopWork is how long the worker's batch works: long enough for the
	// test to see its handler start and stop it first, under load too.
	stopWork = 5 * time.Second
)

// TestStoppedWorkerFencesItself stops a consumer process with SIGSTOP
// while its handler works on a batch, for longer than its expiry; the
// test, another owner, meanwhile expires the batch's tasks (Expire),
// revives them (ReviveTasks) and runs them itself (Poll, and Complete
// with their effect rows), then lets the worker go on (SIGCONT). The
// worker, whose next heartbeat is confirmed more than the expiry after
// the one before, fences itself (EventFenced): its late completion is
// refused and it completes none of the tasks the test ran again; every
// task has exactly one result and one effect row, the test's. The worker
// then recovers and carries on with new work.
func TestStoppedWorkerFencesItself(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	pool, repo := openFaultDB(t, url, stopTopic)
	pushTasks(t, pool, repo, stopTopic, "stopped", stopTasks)
	w := startWorker(t, url, stopTopic, "stopped-worker",
		"-expiry", stopExpiry.String(), "-work", stopWork.String(), "-stubborn", "-report")
	held := awaitHeld(t, pool, repo, stopTopic, w.owner, stopTasks)
	// Stop it once its handler works: stopped between its poll and its
	// handler, the worker would give the batch back unrun when it resumes
	// fenced, and this test is about a handler that is already running.
	w.awaitLine(t, "started")
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) })
	if late := w.printed(); slices.ContainsFunc(late, func(l string) bool { return strings.HasPrefix(l, "completed") }) {
		t.Fatalf("the worker completed its batch before it was stopped (work %v): %q", stopWork, late)
	}
	expired := expireOwner(t, pool, repo, stopTopic, w.owner, stopExpiry, held)
	runAgain(t, pool, repo, stopTopic, expired)
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	outcome := w.awaitLine(t, "completed", "refused")
	fenced := w.awaitLine(t, "event fenced")
	recovered := w.awaitLine(t, "event recovered")
	if strings.HasPrefix(outcome, "completed") {
		t.Errorf("the resumed worker's completion of tasks another owner had run again was not refused: %s; it printed:\n%s",
			outcome, strings.Join(w.printed(), "\n"))
	}
	t.Logf("the worker, resumed: %s; %s; %s", outcome, fenced, recovered)
	// It carries on: a task pushed now is its own.
	pushTasks(t, pool, repo, stopTopic, "after", 1)
	total := awaitAllSucceeded(t, pool, repo, stopTopic)
	w.stop(t)
	if total != stopTasks+1 {
		t.Errorf("%d tasks succeeded, want %d", total, stopTasks+1)
	}
	checkStoppedEffects(t, ctx, pool, repo, w.owner, held)
}

// pushTasks pushes n Ready tasks to topic, identified prefix-0 to
// prefix-(n-1).
func pushTasks(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic, prefix string, n int) {
	t.Helper()
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", prefix, i)}
	}
	if _, err := repo.Push(context.Background(), pool, topic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
}

// awaitHeld waits until owner holds n tasks of topic (Active) and returns
// their sequences.
func awaitHeld(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic, owner string, n int) []int64 {
	t.Helper()
	deadline := time.Now().Add(workerPatience)
	for {
		infos, err := repo.Page(context.Background(), pool, topic,
			taskapi.Listing{States: []taskapi.State{taskapi.Active}}, taskapi.Inception, n+1, taskapi.Forward)
		if err != nil {
			t.Fatal(err)
		}
		var held []int64
		for _, info := range infos {
			if info.Owner == owner {
				held = append(held, info.Sequence)
			}
		}
		if len(held) == n {
			return held
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d tasks of %s after %v, want %d", owner, len(held), topic, workerPatience, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expireOwner expires, as the test's owner, the tasks of the silent owner
// once its heartbeat is older than expiry on the database's clock, and
// returns them: exactly the tasks held, Expired.
func expireOwner(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic, owner string, expiry time.Duration, held []int64) []taskapi.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), workerPatience) // never wait for a stopped process's locks for ever
	defer cancel()
	deadline := time.Now().Add(workerPatience)
	for {
		n, err := repo.Expire(ctx, pool, expiry)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tasks of %s did not expire within %v", owner, workerPatience)
		}
		time.Sleep(20 * time.Millisecond)
	}
	infos, err := repo.Page(ctx, pool, topic, taskapi.Listing{States: []taskapi.State{taskapi.Expired}}, taskapi.Inception, len(held)+1, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	var expired []taskapi.Task
	for _, info := range infos {
		if info.Owner != owner || !slices.Contains(held, info.Sequence) {
			t.Fatalf("task %d of %s expired, not one %s held (%v)", info.Sequence, info.Owner, owner, held)
		}
		expired = append(expired, info.Task)
	}
	if len(expired) != len(held) {
		t.Fatalf("%d tasks expired, want the %d %s held", len(expired), len(held), owner)
	}
	return expired
}

// runAgain revives the expired tasks in place and runs them as the test's
// owner, in one transaction: poll, an effect row each, completion.
func runAgain(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic string, expired []taskapi.Task) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), workerPatience) // never wait for a stopped process's locks for ever
	defer cancel()
	err := taskpg.Transact(pool)(ctx, func(tx taskpg.DB) error {
		if _, err := repo.ReviveTasks(ctx, tx, topic, taskapi.ReviveReset, expired...); err != nil {
			return err
		}
		polled, err := repo.Poll(ctx, tx, topic, len(expired)+1)
		if err != nil {
			return err
		}
		if len(polled) != len(expired) {
			return fmt.Errorf("polled %d tasks after reviving %d", len(polled), len(expired))
		}
		completions := make([]taskapi.Completion, len(polled))
		for i, task := range polled {
			if _, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
				task.Identifier, task.Sequence, repo.Owner()); err != nil {
				return err
			}
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success, Output: repo.Owner()}}
		}
		return repo.Complete(ctx, tx, topic, completions...)
	})
	if err != nil {
		t.Fatalf("run the expired tasks again: %v", err)
	}
}

// checkStoppedEffects checks that every task has one effect row, written
// with its completion by the owner that completed it: the test's for the
// tasks the stopped worker held, the worker's for the rest.
func checkStoppedEffects(t *testing.T, ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, worker string, held []int64) {
	t.Helper()
	rows, err := pool.Query(ctx, "SELECT sequence, count(*), min(owner) FROM fault_effect GROUP BY sequence")
	if err != nil {
		t.Fatal(err)
	}
	effects := map[int64]string{}
	for rows.Next() {
		var seq, n int64
		var owner string
		if err := rows.Scan(&seq, &n, &owner); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("task %d has %d effect rows, want 1", seq, n)
		}
		effects[seq] = owner
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	infos, err := repo.Page(ctx, pool, stopTopic, taskapi.Listing{}, taskapi.Inception, stopTasks+2, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != len(infos) {
		t.Errorf("%d tasks have effect rows, want all %d", len(effects), len(infos))
	}
	for _, info := range infos {
		want := worker
		if slices.Contains(held, info.Sequence) {
			want = repo.Owner()
		}
		if info.State != taskapi.Succeeded || info.Owner != want || info.Output != want || effects[info.Sequence] != want {
			t.Errorf("task %d: %v by %s with output %q, its effect by %q; want Succeeded by %s",
				info.Sequence, info.State, info.Owner, info.Output, effects[info.Sequence], want)
		}
	}
}
