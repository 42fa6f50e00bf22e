package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// requireFakeTimeEnv set to 1 makes the tests that shift a server's clock
// fail instead of skipping when libfaketime is not installed.
const requireFakeTimeEnv = "TASK_TEST_REQUIRE_FAKETIME"

// libfaketimes are where libfaketime is installed: Debian's package
// faketime puts it under the multiarch directory.
var libfaketimes = []string{
	"/usr/lib/*/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

const (
	clockTopic = "clock"
	// clockLater is how long the test's retries and snoozes defer a task:
	// long enough that it does not run again during the test.
	clockLater = time.Hour
	// clockTolerance is how far off the database's clock a retry or a
	// snooze may be deferred from: far less than the skews. The runtime's
	// estimate of the database's clock is off by half a round trip at
	// most.
	clockTolerance = time.Second
)

// clockCase is a database whose clock runs skew from the process's, and a
// Manager with pause that gets a task deferred by due on the database's
// clock.
type clockCase struct {
	name  string
	skew  time.Duration // the database's clock minus the process's
	pause time.Duration
	due   time.Duration
	// late bounds how long after its NotBefore on the database's clock the
	// deferred task may start, when the case is built so that a runtime
	// that waited on the process's clock would start it a pause late;
	// zero: not checked.
	late time.Duration
}

// maxEmpty is how many empty polls the Manager may make before the
// deferred task starts: the first, and one after each pause that ends
// before the due time (due/pause), and three more. The runtime reads the
// database's clock with a round trip and is off by half of it at most, so
// that its poll at the due time may come a little early, find nothing,
// and wait for the rest; three allow for that on a loaded machine. A
// runtime that waits for the database's due time on the process's clock
// polls without pause until it passes when the database runs behind (801
// empty polls in 4 s with the database 3 s behind): it never waits the
// rest, as the time it waits for passed already.
func (c clockCase) maxEmpty() int64 { return int64(c.due/c.pause) + 1 + 3 }

var clockCases = []clockCase{
	// Behind: the due time is already past on the process's clock.
	{name: "behind", skew: -3 * time.Second, pause: time.Second, due: 2 * time.Second},
	// Ahead: on the process's clock the due time is skew+due away, more
	// than the pause, so that a runtime that waited on it would wait the
	// whole pause: pause-due late, where the database's clock says due.
	{name: "ahead", skew: 10 * time.Second, pause: 10 * time.Second, due: time.Second, late: 5 * time.Second},
}

// TestDueTimesOnTheDatabaseClock runs a taskproc Manager on a PostgreSQL
// of the test's own whose clock libfaketime shifts from the process's,
// 3 s behind and 10 s ahead. A task deferred by a few seconds on the
// database's clock (NotBefore) starts once it is due, without a storm of
// empty polls (at most maxEmpty: a runtime that waits on the process's
// clock polls hundreds of times while the database runs behind) and, with
// the database ahead, without waiting a pause too long (the start compared
// with NotBefore on the database's clock). Then a retried and a snoozed
// task are deferred clockLater from the database's clock at their
// settlement, within clockTolerance, whatever the process's clock says.
func TestDueTimesOnTheDatabaseClock(t *testing.T) {
	for _, c := range clockCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testDueTimes(t, c)
		})
	}
}

// clockRun is what one batch of the clock test's handler saw: the
// database's clock before its settlement and after it.
type clockRun struct {
	tasks         []taskapi.Task
	before, after time.Time
	err           error
}

func testDueTimes(t *testing.T, c clockCase) {
	ctx := context.Background()
	pool, repo := skewedPostgres(t, c.skew)
	consumer := registeredOwner(t, pool, "clock-consumer")
	var empty atomic.Int64 // empty polls before the deferred task's
	var dueSeen atomic.Bool
	observer := taskproc.ObserverFunc(func(e taskproc.Event) {
		switch {
		case e.Kind == taskproc.EventEmpty && !dueSeen.Load():
			empty.Add(1)
		case e.Kind == taskproc.EventPolled && slices.ContainsFunc(e.Tasks, func(task taskapi.Task) bool { return task.Input == "due" }):
			dueSeen.Store(true)
		}
	})
	runs := make(chan clockRun, 4)
	m, err := taskproc.NewManager(consumer, taskpg.Transact(pool), clockTopic, clockHandler(pool, repo, runs),
		taskproc.WithPause(c.pause), taskproc.WithSize(10), taskproc.WithObserver(observer),
		taskproc.WithLogger(slog.New(slog.DiscardHandler)),
		taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return clockLater }}))
	if err != nil {
		t.Fatal(err)
	}
	now, err := repo.Now(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	notBefore := now.Add(c.due)
	if _, err := repo.Push(ctx, pool, clockTopic, taskapi.Append, taskapi.Creation{Identifier: "due", Input: "due", NotBefore: notBefore}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopManager(t, m) })

	run := awaitRun(t, runs, c.pause)
	late, polls := run.before.Sub(notBefore), empty.Load()
	t.Logf("the deferred task started %v after its NotBefore on the database's clock, after %d empty polls", late.Round(time.Millisecond), polls)
	if polls > c.maxEmpty() {
		t.Errorf("%d empty polls before a task deferred by %v started (pause %v, database %v from the process), want at most %d",
			polls, c.due, c.pause, c.skew, c.maxEmpty())
	}
	if c.late > 0 && late >= c.late {
		t.Errorf("the deferred task started %v after its NotBefore on the database's clock (pause %v, database %v from the process), want less than %v: the runtime waited for it on the process's clock",
			late.Round(time.Millisecond), c.pause, c.skew, c.late)
	}

	if _, err := repo.Push(ctx, pool, clockTopic, taskapi.Append,
		taskapi.Creation{Identifier: "retry", Input: "retry"}, taskapi.Creation{Identifier: "snooze", Input: "snooze"}); err != nil {
		t.Fatal(err)
	}
	m.Resume()
	run = awaitRun(t, runs, c.pause)
	checkDeferred(t, ctx, pool, repo, run, c.skew)
}

// skewedPostgres starts a PostgreSQL of t's own whose clock libfaketime
// runs skew from the process's, checks that it does, and returns a pool
// on it and the test's repository (see openFaultDB) with the topic of the
// clock test. It skips t when libfaketime is not installed, or fails it
// under TASK_TEST_REQUIRE_FAKETIME=1.
func skewedPostgres(t *testing.T, skew time.Duration) (*pgxpool.Pool, *taskpg.Repository) {
	t.Helper()
	lib := libfaketime(t)
	c := testdb.OwnPostgresEnv(t, "LD_PRELOAD="+lib, fmt.Sprintf("FAKETIME=%+ds", int(skew.Seconds())),
		"FAKETIME_DONT_FAKE_MONOTONIC=1") // its timeouts and latches keep the real pace
	pool, repo := openFaultDB(t, c.URL(), clockTopic)
	before := time.Now()
	now, err := repo.Now(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	mid := before.Add(time.Since(before) / 2).Round(0) // Round(0): the wall clock
	if off := now.Sub(mid); (off - skew).Abs() > clockTolerance {
		t.Fatalf("the database's clock runs %v from the process's, want %v: libfaketime (%s) did not shift it", off, skew, lib)
	}
	return pool, repo
}

// libfaketime returns the path of libfaketime, or skips t (fails it under
// TASK_TEST_REQUIRE_FAKETIME=1) when it is not installed.
func libfaketime(t *testing.T) string {
	t.Helper()
	for _, pattern := range libfaketimes {
		if found, _ := filepath.Glob(pattern); len(found) > 0 {
			return found[0]
		}
	}
	why := fmt.Sprintf("libfaketime is not installed (%v; Debian's package faketime)", libfaketimes)
	if os.Getenv(requireFakeTimeEnv) == "1" {
		t.Fatalf("%s, required by %s=1", why, requireFakeTimeEnv)
	}
	t.Skipf("%s; skipping", why)
	return ""
}

// clockHandler decides every task Success, but retries a task with the
// input "retry" and snoozes one with "snooze" for clockLater, and sends
// what it saw to runs: the database's clock before and after the
// settlement.
func clockHandler(pool *pgxpool.Pool, repo *taskpg.Repository, runs chan<- clockRun) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		before, err := repo.Now(ctx, pool)
		if err != nil {
			return err
		}
		decisions := taskproc.Decisions{}
		for _, task := range b.Tasks() {
			decisions[task] = taskapi.Decision{Result: taskapi.Success}
			switch task.Input {
			case "retry":
				err = b.Retry(task, errors.New("retried by the clock test"))
			case "snooze":
				err = b.Snooze(task, clockLater)
			}
			if err != nil {
				return err
			}
		}
		err = b.Complete(decisions)
		after, nowErr := repo.Now(context.Background(), pool) // b's context ended with its settlement
		runs <- clockRun{tasks: b.Tasks(), before: before, after: after, err: errors.Join(err, nowErr)}
		return nil
	})
}

// awaitRun waits for the next batch of the clock test's handler, which
// must have been settled without error.
func awaitRun(t *testing.T, runs <-chan clockRun, pause time.Duration) clockRun {
	t.Helper()
	patience := workerPatience + 2*pause
	select {
	case run := <-runs:
		if run.err != nil {
			t.Fatalf("settle tasks %v: %v", sequences(run.tasks), run.err)
		}
		return run
	case <-time.After(patience):
		t.Fatalf("no batch within %v", patience)
		return clockRun{}
	}
}

// checkDeferred checks that the retried and the snoozed task of run are
// Ready, due clockLater after the database's clock read at their
// settlement: between the readings before and after it, within
// clockTolerance.
func checkDeferred(t *testing.T, ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, run clockRun, skew time.Duration) {
	t.Helper()
	if len(run.tasks) != 2 {
		t.Fatalf("the batch of the retried and the snoozed task holds %d tasks", len(run.tasks))
	}
	for _, task := range run.tasks {
		info, ok, err := repo.Lookup(ctx, pool, clockTopic, task.Sequence)
		if err != nil || !ok {
			t.Fatalf("look up task %s: %v (found %v)", task.Identifier, err, ok)
		}
		from := info.NotBefore.Add(-clockLater) // when the runtime took the database's clock to be
		if info.State != taskapi.Ready || from.Before(run.before.Add(-clockTolerance)) || from.After(run.after.Add(clockTolerance)) {
			t.Errorf("task %s (%v) due at %v, %v from the database's clock at its settlement (%v to %v), want %v within %v (database %v from the process)",
				task.Identifier, info.State, info.NotBefore, info.NotBefore.Sub(run.before).Round(time.Millisecond),
				run.before, run.after, clockLater, clockTolerance, skew)
		}
	}
}

// stopManager stops m, failing t when it does not stop in time.
func stopManager(t *testing.T, m *taskproc.Manager[taskpg.DB]) {
	ctx, cancel := context.WithTimeout(context.Background(), workerPatience)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Errorf("stop the Manager: %v", err)
	}
}
