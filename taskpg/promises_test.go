package taskpg_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// patience is how long a test waits for a call that must not be blocked:
// far longer than the call takes, so that only a call that waits for a lock
// runs out of it.
const patience = 2 * time.Minute

// countTasks counts the tasks with the given sequences, in any topic.
func countTasks(t *testing.T, db taskpg.DB, seqs []int64) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM public.task WHERE sequence = ANY ($1)`, seqs).Scan(&n); err != nil {
		t.Fatalf("count tasks: %v", err)
	}
	return n
}

// The repository never commits or rolls back a transaction that the caller
// began with a plain BEGIN on a connection (*pgx.Conn, *pgxpool.Conn), also
// in the calls that work in a savepoint or a unit of their own: a bulk Push
// (COPY), a recreating ReviveTasks and PurgeAll. After the caller's ROLLBACK
// nothing of the transaction is left: neither the caller's own table nor
// the calls' changes.
func TestCallsNeverCommitTheCallersTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		handle func(*pgxpool.Conn) taskpg.DB
	}{
		{"*pgx.Conn", func(c *pgxpool.Conn) taskpg.DB { return c.Conn() }},
		{"*pgxpool.Conn", func(c *pgxpool.Conn) taskpg.DB { return c }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, repo := setup(t, "t", "other")
			push(t, repo, db, "t", taskapi.Append, ids("x", "y", "z")...)
			done := poll(t, repo, db, "t", 3)
			complete(t, repo, db, "t", taskapi.Success, done...)
			kept := push(t, repo, db, "other", taskapi.Append, ids("k1", "k2")...)

			pooled, err := db.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pooled.Release()
			conn, raw := c.handle(pooled), pooled.Conn()
			run := func(statement string) {
				t.Helper()
				if _, err := raw.Exec(ctx, statement); err != nil {
					t.Fatalf("%s: %v", statement, err)
				}
			}
			stillOpen := func(after string) {
				t.Helper()
				if status := raw.PgConn().TxStatus(); status != 'T' {
					t.Errorf("after %s the caller's transaction is not open any more (status %q): the call ended it", after, status)
				}
			}
			run("BEGIN")
			run("CREATE TABLE public.mine (x integer)")
			pushed, err := repo.Push(ctx, conn, "t", taskapi.Append, bulkCreations()...)
			if err != nil || len(pushed) != bulk {
				t.Fatalf("Push of %d tasks = %d tasks, %v", bulk, len(pushed), err)
			}
			stillOpen("a Push of 150 tasks")
			revivals, err := repo.ReviveTasks(ctx, conn, "t", taskapi.ReviveAppend, done...)
			if err != nil || len(revivals) != len(done) {
				t.Fatalf("ReviveTasks = %v, %v", revivals, err)
			}
			stillOpen("ReviveTasks")
			if err := repo.PurgeAll(ctx, conn, "other"); err != nil {
				t.Fatalf("PurgeAll: %v", err)
			}
			stillOpen("PurgeAll")
			run("ROLLBACK")

			var mine bool
			if err := db.QueryRow(ctx, `SELECT to_regclass('public.mine') IS NOT NULL`).Scan(&mine); err != nil {
				t.Fatal(err)
			}
			if mine {
				t.Errorf("the caller's table survived its ROLLBACK: a call committed the caller's transaction")
			}
			if n := countTasks(t, db, sequences(pushed)); n != 0 {
				t.Errorf("%d of the %d pushed tasks survived the caller's ROLLBACK", n, bulk)
			}
			var recreated []int64
			for _, r := range revivals {
				recreated = append(recreated, r.Current.Sequence)
			}
			if n := countTasks(t, db, recreated); n != 0 {
				t.Errorf("%d tasks of the rolled back ReviveTasks survived the caller's ROLLBACK", n)
			}
			byState := map[taskapi.State]int{}
			for _, s := range states(t, repo, db, "t") {
				byState[s]++
			}
			if len(byState) != 1 || byState[taskapi.Succeeded] != len(done) {
				t.Errorf("tasks of topic t by state after the ROLLBACK = %v, want the %d tasks Succeeded as before", byState, len(done))
			}
			if n := countTasks(t, db, sequences(kept)); n != len(kept) {
				t.Errorf("%d of the %d tasks of topic other left after the rolled back PurgeAll, want all", n, len(kept))
			}
		})
	}
}

// copyCancelKey keys the cancel function that copyCanceller calls.
type copyCancelKey struct{}

// copyCanceller is a pgx tracer that cancels the context of a COPY as soon
// as the COPY is done, by the cancel function it finds in the context under
// copyCancelKey: between the COPY of a bulk Push and the end of its savepoint or
// transaction.
type copyCanceller struct{ fired atomic.Int32 }

func (*copyCanceller) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (*copyCanceller) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (*copyCanceller) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

func (c *copyCanceller) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	if cancel, ok := ctx.Value(copyCancelKey{}).(context.CancelFunc); ok && data.Err == nil {
		cancel()
		c.fired.Add(1)
	}
}

// tracedPool returns a pool on a fresh database with tracer on every
// connection and an empty search_path, as testdb.Postgres.
func tracedPool(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// A call whose context is cancelled while it runs never leaves part of its
// work behind: a bulk Push (COPY) whose context is cancelled right after the
// COPY, before its savepoint is released (or its own transaction
// committed), either fails and stores nothing, or succeeds and stores every
// task. The caller's transaction stays usable.
func TestCancelledBulkPushIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// begin returns the handle to push on and a function that ends
		// the caller's transaction, if any, with a commit.
		begin func(t *testing.T, pool *pgxpool.Pool) (taskpg.DB, func())
	}{
		{"pgx.Tx", func(t *testing.T, pool *pgxpool.Pool) (taskpg.DB, func()) {
			tx, err := pool.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			return tx, func() {
				if _, err := tx.Exec(t.Context(), "SELECT 1"); err != nil {
					t.Errorf("after the cancelled Push the caller's transaction is not usable: %v", err)
				}
				if err := tx.Commit(t.Context()); err != nil {
					t.Fatalf("Commit: %v", err)
				}
			}
		}},
		{"BEGIN on a connection", func(t *testing.T, pool *pgxpool.Pool) (taskpg.DB, func()) {
			conn, err := pool.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(conn.Release)
			if _, err := conn.Exec(t.Context(), "BEGIN"); err != nil {
				t.Fatal(err)
			}
			return conn.Conn(), func() {
				if _, err := conn.Exec(t.Context(), "SELECT 1"); err != nil {
					t.Errorf("after the cancelled Push the caller's transaction is not usable: %v", err)
				}
				if _, err := conn.Exec(t.Context(), "COMMIT"); err != nil {
					t.Fatalf("COMMIT: %v", err)
				}
			}
		}},
		{"pool", func(t *testing.T, pool *pgxpool.Pool) (taskpg.DB, func()) {
			return pool, func() {}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tracer := &copyCanceller{}
			pool := tracedPool(t, tracer)
			repo := newRepo(t, pool, "a")
			if _, err := repo.Initialize(t.Context(), pool, "t"); err != nil {
				t.Fatal(err)
			}
			db, commit := c.begin(t, pool)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ctx = context.WithValue(ctx, copyCancelKey{}, context.CancelFunc(cancel))
			tasks, err := repo.Push(ctx, db, "t", taskapi.Append, bulkCreations()...)
			if tracer.fired.Load() == 0 {
				t.Fatalf("the Push of %d tasks (%v) did not go through a COPY: the test cancelled nothing", bulk, err)
			}
			commit()
			var stored int
			if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM public.task WHERE topic = 't'`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			switch {
			case err != nil && stored != 0:
				t.Errorf("Push failed (%v) but %d of its %d tasks were stored", err, stored, bulk)
			case err == nil && (stored != bulk || len(tasks) != bulk):
				t.Errorf("Push succeeded with %d tasks, but %d of %d were stored", len(tasks), stored, bulk)
			default:
				t.Logf("Push with its context cancelled after the COPY: %d tasks returned, %d stored, error %v", len(tasks), stored, err)
			}
		})
	}
}

// lockModes returns the modes of the locks that the backend pid holds on the
// task table itself (not its partitions).
func lockModes(t *testing.T, db taskpg.DB, pid int32) []string {
	t.Helper()
	rows, _ := db.Query(t.Context(), `
SELECT mode FROM pg_catalog.pg_locks
WHERE pid = $1 AND granted AND locktype = 'relation' AND relation = 'public.task'::regclass
ORDER BY mode`, pid)
	modes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read pg_locks: %v", err)
	}
	return modes
}

func backendPID(t *testing.T, tx pgx.Tx) int32 {
	t.Helper()
	var pid int32
	if err := tx.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// pushPollComplete pushes a task to topic on db, polls it and completes it.
func pushPollComplete(ctx context.Context, repo *taskpg.Repository, db taskpg.DB, topic string) error {
	pushed, err := repo.Push(ctx, db, topic, taskapi.Append, ids("p")...)
	if err != nil {
		return fmt.Errorf("Push: %w", err)
	}
	polled, err := repo.Poll(ctx, db, topic, 10)
	if err != nil {
		return fmt.Errorf("Poll: %w", err)
	}
	if len(polled) == 0 || polled[len(polled)-1] != pushed[0] {
		return fmt.Errorf("Poll = %v, want the pushed task %v last", polled, pushed[0])
	}
	completions := make([]taskapi.Completion, len(polled))
	for i, task := range polled {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	if err := repo.Complete(ctx, db, topic, completions...); err != nil {
		return fmt.Errorf("Complete: %w", err)
	}
	return nil
}

// Creating and destroying a topic locks no other topic: Initialize
// completes while a report reads the tasks of every topic, and pushes,
// polls and completions of other topics go on while an Initialize and a
// Destroy wait in open transactions. Neither holds an ACCESS EXCLUSIVE lock
// on the task table (which CREATE TABLE ... PARTITION OF, ATTACH without
// care, DETACH and DROP of a partition take).
func TestTopicDDLNeverBlocksOtherTopics(t *testing.T) {
	t.Parallel()
	t.Run("a report is open", func(t *testing.T) {
		t.Parallel()
		db, repo := setup(t, "existing")
		push(t, repo, db, "existing", taskapi.Append, ids("x", "y")...)
		report, err := db.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer report.Rollback(context.Background())
		var n int
		if err := report.QueryRow(t.Context(), `SELECT count(*) FROM public.task`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("report = %d tasks, %v", n, err)
		}
		testdb.Returns(t, "Initialize of a new topic while a report reads every topic", patience, func(ctx context.Context) error {
			created, err := repo.Initialize(ctx, db, "new")
			if err == nil && !created {
				err = fmt.Errorf("Initialize reported the new topic as known")
			}
			return err
		})
		testdb.Returns(t, "Push, Poll and Complete of an existing topic while the report is open", patience, func(ctx context.Context) error {
			return pushPollComplete(ctx, repo, db, "existing")
		})
		testdb.Returns(t, "Push, Poll and Complete of the new topic while the report is open", patience, func(ctx context.Context) error {
			return pushPollComplete(ctx, repo, db, "new")
		})
	})
	t.Run("an Initialize and a Destroy are open", func(t *testing.T) {
		t.Parallel()
		db, repo := setup(t, "doomed", "busy")
		push(t, repo, db, "doomed", taskapi.Append, ids("d")...)
		push(t, repo, db, "busy", taskapi.Append, ids("b")...)
		creating, err := db.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer creating.Rollback(context.Background())
		destroying, err := db.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer destroying.Rollback(context.Background())
		testdb.Returns(t, "Initialize in an open transaction", patience, func(ctx context.Context) error {
			_, err := repo.Initialize(ctx, creating, "fresh")
			return err
		})
		testdb.Returns(t, "Destroy in another open transaction while the Initialize is open", patience, func(ctx context.Context) error {
			_, err := repo.Destroy(ctx, destroying, "doomed")
			return err
		})
		if t.Failed() {
			t.FailNow()
		}
		for name, tx := range map[string]pgx.Tx{"Initialize": creating, "Destroy": destroying} {
			for _, mode := range lockModes(t, db, backendPID(t, tx)) {
				if mode == "AccessExclusiveLock" {
					t.Errorf("the open transaction of the %s holds an AccessExclusiveLock on public.task: it blocks every topic", name)
				}
			}
		}
		testdb.Returns(t, "Push, Poll and Complete of a third topic while an Initialize and a Destroy are open", patience, func(ctx context.Context) error {
			return pushPollComplete(ctx, repo, db, "busy")
		})
		if err := creating.Commit(t.Context()); err != nil {
			t.Fatalf("commit the Initialize: %v", err)
		}
		if err := destroying.Commit(t.Context()); err != nil {
			t.Fatalf("commit the Destroy: %v", err)
		}
		topics, err := repo.Topics(t.Context(), db)
		if err != nil || strings.Join(topics, ",") != "busy,fresh" {
			t.Errorf("Topics after the commits = %v, %v; want [busy fresh]", topics, err)
		}
	})
}

// Concurrent Replace pushes of one identifier, each in a transaction of its
// own that stays open a moment after the push, leave at most one task of the
// identifier in Ready..Succeeded: they take turns, and each sees the task of
// the one before it.
func TestConcurrentReplacesLeaveOneLiveTask(t *testing.T) {
	t.Parallel()
	const (
		pushers = 8
		rounds  = 5
	)
	for name, opts := range map[string][]taskpg.Option{"default": nil, "exclusive": {taskpg.WithExclusive()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, _ := setup(t, "t")
			repo := newRepo(t, db, "r", opts...)
			push(t, repo, db, "t", taskapi.Append, ids("x")...)
			replace := func(ctx context.Context, pusher int) error {
				tx, err := db.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(context.Background())
				if _, err := repo.Push(ctx, tx, "t", taskapi.Replace, taskapi.Creation{Identifier: "x", Input: fmt.Sprint(pusher)}); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond) // stay open a moment, as a caller's transaction does
				return tx.Commit(ctx)
			}
			for round := range rounds {
				ctx, cancel := context.WithTimeout(t.Context(), patience)
				start := make(chan struct{})
				errs := make(chan error, pushers)
				for pusher := range pushers {
					go func() {
						<-start
						errs <- replace(ctx, pusher)
					}()
				}
				close(start)
				for range pushers {
					select {
					case err := <-errs:
						if err != nil {
							t.Errorf("round %d: Replace in a transaction of its own: %v", round, err)
						}
					case <-time.After(patience + time.Minute):
						t.Fatalf("round %d: the Replace pushes did not finish within %v", round, patience)
					}
				}
				cancel()
				var live int
				err := db.QueryRow(t.Context(), `
SELECT count(*) FROM public.task WHERE topic = 't' AND identifier = 'x' AND state BETWEEN 1 AND 6`).Scan(&live)
				if err != nil {
					t.Fatal(err)
				}
				if live != 1 {
					t.Fatalf("round %d: %d tasks of identifier x in Ready..Succeeded after %d concurrent Replace pushes, want exactly one", round, live, pushers)
				}
			}
		})
	}
}

// Times record the moment of the call, not the start of the caller's
// transaction: tasks pushed (one, many with COPY, with Replace), a
// completion, a new owner's registration and a heartbeat, some time after
// the transaction began, carry times later than its start.
func TestTimesRecordTheMomentOfTheCall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := setup(t, "t")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var start time.Time
	if err := tx.QueryRow(ctx, "SELECT now()").Scan(&start); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	after := func(what string, got time.Time) {
		t.Helper()
		if !got.After(start) {
			t.Errorf("%s recorded %v, not later than the start of the transaction %v", what, got.UTC(), start.UTC())
		}
	}
	created := func(what string, tasks []taskapi.Task) {
		t.Helper()
		for _, task := range tasks {
			info, ok, err := repo.Lookup(ctx, tx, "t", task.Sequence)
			if err != nil || !ok {
				t.Fatalf("Lookup(%d) = %v, %v", task.Sequence, ok, err)
			}
			after(fmt.Sprintf("%s: Created of task %d", what, task.Sequence), info.Created)
		}
	}
	created("a single Push", push(t, repo, tx, "t", taskapi.Append, ids("one")...))
	created("a Push of two", push(t, repo, tx, "t", taskapi.Append, ids("two", "three")...))
	created("a Push of 150 (COPY)", push(t, repo, tx, "t", taskapi.Append, bulkCreations()...)[:3])
	created("a Replace", push(t, repo, tx, "t", taskapi.Replace, ids("one")...))
	polled := poll(t, repo, tx, "t", 1)
	complete(t, repo, tx, "t", taskapi.Success, polled...)
	info, _, err := repo.Lookup(ctx, tx, "t", polled[0].Sequence)
	if err != nil {
		t.Fatal(err)
	}
	after("Complete", info.Completed)

	late, err := taskpg.New("late")
	if err != nil {
		t.Fatal(err)
	}
	if registered, err := late.Register(ctx, tx); err != nil || !registered {
		t.Fatalf("Register of a new owner = %v, %v", registered, err)
	}
	if err := repo.Heartbeat(ctx, tx); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"late", "a"} {
		var heartbeat time.Time
		if err := tx.QueryRow(ctx, `SELECT heartbeat FROM public.task_owner WHERE owner = $1`, owner).Scan(&heartbeat); err != nil {
			t.Fatal(err)
		}
		what := map[string]string{"late": "Register of a new owner", "a": "Heartbeat"}[owner]
		after(what, heartbeat)
	}
}

// expireCanceller is a pgx tracer that cancels the context of the second
// statement that expires tasks, by the cancel function it finds in the
// context under copyCancelKey: between two chunks of topics.
type expireCanceller struct{ seen atomic.Int32 }

func (c *expireCanceller) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if cancel, ok := ctx.Value(copyCancelKey{}).(context.CancelFunc); ok && strings.Contains(data.SQL, "SET state = 2") {
		if c.seen.Add(1) == 2 {
			cancel()
		}
	}
	return ctx
}

func (*expireCanceller) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// An Expire inside the caller's transaction that spans more topics than one
// statement names, and fails between two of its statements, changes
// nothing: its chunks are one savepoint, and the transaction stays usable.
func TestExpireInATransactionIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tracer := &expireCanceller{}
	db := tracedPool(t, tracer)
	a, b := newRepo(t, db, "a"), newRepo(t, db, "b")
	const topics = 40 // more than one statement's chunk of topics
	for i := range topics {
		topic := fmt.Sprintf("t%02d", i)
		if _, err := a.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
		push(t, a, db, topic, taskapi.Append, ids("x")...)
		poll(t, a, db, topic, 1)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	n, err := b.Expire(context.WithValue(callCtx, copyCancelKey{}, cancel), tx, 0)
	if tracer.seen.Load() < 2 {
		t.Fatalf("Expire sent %d statements that expire tasks, want a second one to cancel", tracer.seen.Load())
	}
	if err == nil {
		t.Fatalf("Expire cancelled between its statements = %d, nil; want an error", n)
	}
	count := func(h taskpg.DB) int {
		t.Helper()
		var n int
		if err := h.QueryRow(ctx, `SELECT count(*) FROM public.task WHERE state = 2`).Scan(&n); err != nil {
			t.Fatalf("count Expired tasks: %v", err)
		}
		return n
	}
	if n := count(tx); n != 0 {
		t.Errorf("%d tasks Expired in the transaction after the failed Expire, want none", n)
	}
	if n, err := b.Expire(ctx, tx, 0); err != nil || n != topics {
		t.Errorf("Expire again in the transaction = %d, %v; want %d", n, err, topics)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(db); n != topics {
		t.Errorf("%d tasks Expired after the commit, want %d", n, topics)
	}
}
