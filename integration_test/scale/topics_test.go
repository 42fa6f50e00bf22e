//go:build heavy

package scale

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The shape of TestTopicsAtTenThousand's repository.
const (
	scaleTopics   = 10_000
	scaleRichStep = 50  // every 50th topic is rich: 200 topics
	scaleRichMore = 150 // tasks pushed to a rich topic beyond its first (a COPY)
	scaleRichPoll = 20  // tasks A polls in a rich topic beyond its first
	scaleRichDone = 10  // of which A completes this many
	scaleRepoll   = 5   // tasks A polls again in each rich topic once expired
	scaleWorkers  = 16  // goroutines on the pool (testdb's pool has 16 connections)
	// scaleAttachers initialize the topics: more are slower, not faster
	// (3,000 topics took 23 s with one or two, 64 s with sixteen), since
	// every attachment of a partition makes each session that uses the
	// task table rebuild its list of partitions, and attachments take
	// turns anyway.
	scaleAttachers = 2
)

// scale is the repository that TestTopicsAtTenThousand builds, and what it
// expects of it.
type scale struct {
	topics         []string
	rich           []string
	a, b, gone     *taskpg.Repository
	first          int64 // the lowest sequence
	held, finished int   // A's Active tasks, the completed tasks
	ready, total   int
}

// inParallel calls fn for 0..n-1 on workers goroutines and returns the
// first error; it gives up once ctx is done.
func inParallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel()
					errs <- fmt.Errorf("item %d: %w", i, err)
					return
				}
			}
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	return first
}

// TestTopicsAtTenThousand proves that every call works at 10,000 topics
// under PostgreSQL's default lock table (max_locks_per_transaction = 64):
// on a pool no call runs out of shared memory (SQLSTATE 53200) or fails
// otherwise. An owner holds tasks in every topic, so that Expire and
// Register visit them all; Count, Results, Resolve and Refresh read them all.
//
// Inside one transaction that runs them all, every call works too but three
// whose writes span every topic: Expire and Register of the owner that holds
// tasks in all of them, and Refresh. A transaction keeps the lock on each
// partition it wrote until it ends, and 10,000 partitions hold more locks
// than the server's lock table has room for, whatever the repository does.
// Those may fail, and then only as README says: with the error that tells
// to call them on a pool, having changed nothing, the transaction usable.
//
// It fills much of the server's lock table, which every session shares, so
// it runs on a PostgreSQL of its own (testdb.OwnPostgres), in parallel
// with the other tests of its package, whose servers it leaves alone. Most
// of its time goes to creating the topics, two at a time (scaleAttachers):
// attaching a partition costs in proportion to the partitions there are,
// and attachments take turns on the task table. It takes 8 to 17 minutes
// on two quiet cores, and twice as long beside other work, so it is built
// only with the tag heavy, which .ci/run gives in a step of its own
// (CONTRIBUTING.md, "Heavy tests").
func TestTopicsAtTenThousand(t *testing.T) {
	t.Parallel()
	dbURL := testdb.OwnPostgres(t).URL()
	pool := testdb.Pool(t, dbURL, scaleWorkers)
	var setting string
	if err := pool.QueryRow(t.Context(), "SHOW max_locks_per_transaction").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if locks, err := strconv.Atoi(setting); err != nil || locks > 64 {
		t.Skipf("the server has max_locks_per_transaction = %s; the test proves the default (64) is enough", setting)
	}
	s := buildScale(t, pool)
	if t.Failed() {
		t.FailNow()
	}
	t.Run("transaction", func(t *testing.T) {
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		everyCallAtScale(t, s, tx, tx)
		// Rolled back, so that the pool starts from the same tasks.
		if err := tx.Rollback(t.Context()); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
	})
	t.Run("pool", func(t *testing.T) { everyCallAtScale(t, s, pool, nil) })
	t.Run("taskansi", func(t *testing.T) { spanningCallsOfTaskansi(t, s, dbURL) })
}

// spanningCallsOfTaskansi runs the calls that span topics through taskansi
// on a *sql.DB opened as README says (statements planned per call), after
// taskpg's runs: a new owner holds a task in every topic, another expires
// them, it polls again and a new value of it registers and takes over.
func spanningCallsOfTaskansi(t *testing.T, s *scale, dbURL string) {
	ctx := t.Context()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	q.Set("search_path", "")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(scaleWorkers)
	owner := func(name string) *taskansi.Repository {
		repo, err := taskansi.New(taskansi.Postgres, name)
		if err == nil {
			_, err = repo.Register(ctx, db)
		}
		if err != nil {
			t.Fatalf("owner %s: %v", name, err)
		}
		return repo
	}
	a, b := owner("ansi-a"), owner("ansi-b")
	topics, err := a.Topics(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, fn func(ctx context.Context, i int) error) {
		t.Helper()
		start := time.Now()
		if err := inParallel(ctx, scaleWorkers, len(topics), fn); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%-58s %v", what, time.Since(start).Round(time.Millisecond))
	}
	pollOne := func(ctx context.Context, i int) error {
		tasks, err := a.Poll(ctx, db, topics[i], 1)
		if err == nil && len(tasks) != 1 {
			err = fmt.Errorf("Poll of %s = %d tasks, want 1", topics[i], len(tasks))
		}
		return err
	}
	call := func(what string, fn func(ctx context.Context) error) {
		t.Helper()
		start := time.Now()
		if err := fn(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%-58s %v", what, time.Since(start).Round(time.Millisecond))
	}
	active := func() int {
		t.Helper()
		counts, err := b.Count(ctx, db, taskapi.Total, taskapi.Counting{States: []taskapi.State{taskapi.Active}}, taskapi.Unbounded)
		if err != nil {
			t.Fatalf("Count of Active tasks: %v", err)
		}
		if len(counts) != len(topics) {
			t.Errorf("Count of every topic lists %d topics, want %d", len(counts), len(topics))
		}
		n := 0
		for _, byState := range counts {
			n += int(byState[taskapi.Active].Count)
		}
		return n
	}
	step("taskansi: Push of two tasks to every topic", func(ctx context.Context, i int) error {
		_, err := a.Push(ctx, db, topics[i], taskapi.Append, taskapi.Creation{Identifier: "one"}, taskapi.Creation{Identifier: "two"})
		return err
	})
	step("taskansi: Poll by A of one task in every topic", pollOne)
	var expired int64
	call("taskansi: Expire(0) by B: A's tasks in every topic", func(ctx context.Context) (err error) {
		expired, err = b.Expire(ctx, db, 0)
		return err
	})
	if expired != int64(len(topics)) {
		t.Errorf("Expire(0) expired %d tasks, want A's %d", expired, len(topics))
	}
	step("taskansi: Poll by A of one task in every topic again", pollOne)
	call("taskansi: Register of a new value of A (every topic)", func(ctx context.Context) error {
		restarted, err := taskansi.New(taskansi.Postgres, "ansi-a")
		if err == nil {
			_, err = restarted.Register(ctx, db)
		}
		return err
	})
	if n := active(); n != 0 {
		t.Errorf("%d tasks Active after A registered again, want none", n)
	}
	call("taskansi: Results, Resolve, Refresh, PurgeOwners", func(ctx context.Context) error {
		results, err := b.Results(ctx, db, time.Time{}, time.Time{})
		if err == nil && len(results) != len(topics) {
			err = fmt.Errorf("Results lists %d topics, want %d", len(results), len(topics))
		}
		if err == nil {
			_, err = b.Resolve(ctx, db, time.Now(), true)
		}
		if err == nil {
			_, err = b.Resolve(ctx, db, time.Now().Add(-time.Hour), false)
		}
		if err == nil {
			err = b.Refresh(ctx, db)
		}
		if err == nil {
			_, err = b.PurgeOwners(ctx, db, 0)
		}
		return err
	})
}

// buildScale creates the topics and tasks of TestTopicsAtTenThousand, and
// logs how long each part took.
func buildScale(t *testing.T, pool *pgxpool.Pool) *scale {
	t.Helper()
	// No deadline of its own: creating the topics takes 5 minutes on a
	// quiet machine and over 20 on a busy one, and it proves no promise of
	// speed. go test's -timeout ends a setup that hangs.
	ctx := t.Context()
	owner := func(name string) *taskpg.Repository {
		repo, err := taskpg.New(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Register(ctx, pool); err != nil {
			t.Fatalf("Register(%q): %v", name, err)
		}
		return repo
	}
	s := &scale{a: owner("a"), b: owner("b"), gone: owner("gone"), first: taskapi.MaxSequence}
	for i := range scaleTopics {
		s.topics = append(s.topics, fmt.Sprintf("topic-%05d", i))
		if i%scaleRichStep == 0 {
			s.rich = append(s.rich, s.topics[i])
		}
	}
	phase := func(what string, workers, n int, fn func(ctx context.Context, i int) error) {
		t.Helper()
		start := time.Now()
		if err := inParallel(ctx, workers, n, fn); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("setup: %-55s %v", what, time.Since(start).Round(time.Millisecond))
	}
	phase("Initialize of 10,000 topics", scaleAttachers, scaleTopics, func(ctx context.Context, i int) error {
		created, err := s.a.Initialize(ctx, pool, s.topics[i])
		if err == nil && !created {
			err = fmt.Errorf("topic %s was known already", s.topics[i])
		}
		return err
	})
	var first atomic.Int64
	first.Store(taskapi.MaxSequence)
	phase("Push of one task to every topic", scaleWorkers, scaleTopics, func(ctx context.Context, i int) error {
		tasks, err := s.a.Push(ctx, pool, s.topics[i], taskapi.Append, taskapi.Creation{Identifier: "solo", Input: s.topics[i]})
		if err == nil {
			for seq := tasks[0].Sequence; ; {
				if low := first.Load(); seq >= low || first.CompareAndSwap(low, seq) {
					break
				}
			}
		}
		return err
	})
	s.first = first.Load()
	phase("Push of 150 tasks to each of 200 topics", scaleWorkers, len(s.rich), func(ctx context.Context, i int) error {
		creations := make([]taskapi.Creation, scaleRichMore)
		for j := range creations {
			creations[j] = taskapi.Creation{Identifier: fmt.Sprintf("id-%d", j), Input: "in"}
		}
		_, err := s.a.Push(ctx, pool, s.rich[i], taskapi.Append, creations...)
		return err
	})
	phase("Poll by A of one task in every topic", scaleWorkers, scaleTopics, func(ctx context.Context, i int) error {
		tasks, err := s.a.Poll(ctx, pool, s.topics[i], 1)
		if err == nil && len(tasks) != 1 {
			err = fmt.Errorf("Poll of %s = %d tasks, want 1", s.topics[i], len(tasks))
		}
		return err
	})
	phase("Poll of 20 and Complete of 10 by A in 200 topics", scaleWorkers, len(s.rich), func(ctx context.Context, i int) error {
		tasks, err := s.a.Poll(ctx, pool, s.rich[i], scaleRichPoll)
		if err == nil && len(tasks) != scaleRichPoll {
			err = fmt.Errorf("Poll of %s = %d tasks, want %d", s.rich[i], len(tasks), scaleRichPoll)
		}
		if err != nil {
			return err
		}
		completions := make([]taskapi.Completion, scaleRichDone)
		for j := range completions {
			completions[j] = taskapi.Completion{Task: tasks[j], Decision: taskapi.Decision{Result: taskapi.Result(j % 4)}}
		}
		return s.a.Complete(ctx, pool, s.rich[i], completions...)
	})
	s.held = scaleTopics + len(s.rich)*(scaleRichPoll-scaleRichDone)
	s.finished = len(s.rich) * scaleRichDone
	s.total = scaleTopics + len(s.rich)*scaleRichMore
	s.ready = s.total - s.held - s.finished
	return s
}

// everyCallAtScale runs every call on db, a pool or the transaction tx, and
// checks what each returns; it logs how long each call took. Inside tx every
// call runs in a savepoint of the test's own, which it releases (keeping
// the call's locks) when the call succeeds, and rolls back to when it fails,
// so that the calls after a failure run still.
func everyCallAtScale(t *testing.T, s *scale, db taskpg.DB, tx pgx.Tx) {
	ctx := t.Context()
	control := func(statement string) {
		t.Helper()
		if _, err := tx.Exec(ctx, statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	// call runs fn, in a savepoint of the test's own inside tx. A call that
	// spans every topic may run out of the lock table inside tx; it must
	// then say so, change nothing and leave tx usable.
	held := func() string { // the Active and Expired tasks per topic, in short
		counts, err := s.b.Count(ctx, db, taskapi.Total, taskapi.Counting{States: []taskapi.State{taskapi.Active, taskapi.Expired}}, taskapi.Unbounded)
		if err != nil {
			t.Fatalf("Count of Active and Expired tasks: %v", err)
		}
		return fmt.Sprint(counts)
	}
	call := func(what string, fn func(ctx context.Context) error, spansEveryTopic ...bool) bool {
		t.Helper()
		var before string
		if tx != nil && len(spansEveryTopic) > 0 {
			before = held()
		}
		if tx != nil {
			control("SAVEPOINT scale_call")
		}
		start := time.Now()
		err := fn(ctx)
		t.Logf("%-58s %v", what, time.Since(start).Round(time.Millisecond))
		var pgErr *pgconn.PgError
		lockTable := errors.As(err, &pgErr) && pgErr.Code == "53200"
		switch {
		case lockTable && tx != nil && len(spansEveryTopic) > 0:
			if !strings.Contains(err.Error(), "on a pool") {
				t.Errorf("%s ran out of the lock table without saying what to do: %v", what, err)
			}
			control("SELECT 1") // before the test's own rollback: the call rolled back its own work
			if held() != before {
				t.Errorf("%s failed and changed the Active and Expired tasks", what)
			}
			t.Logf("%s ran out of the lock table inside the transaction, as README says it may", what)
		case lockTable:
			t.Errorf("%s ran out of the server's lock table (SQLSTATE 53200): %v", what, err)
		case err != nil:
			t.Errorf("%s: %v", what, err)
		}
		if tx != nil && err != nil {
			control("ROLLBACK TO SAVEPOINT scale_call")
		}
		if tx != nil {
			control("RELEASE SAVEPOINT scale_call")
		}
		return err == nil
	}
	sum := func(counts map[string]map[taskapi.State]taskapi.Summary, states ...taskapi.State) int {
		n := 0
		for _, byState := range counts {
			for state, summary := range byState {
				if len(states) == 0 || state == states[0] {
					n += int(summary.Count)
				}
			}
		}
		return n
	}
	var expired int64
	expiredAll := call("Expire(0) by B: A's tasks in 10,000 topics", func(ctx context.Context) (err error) {
		expired, err = s.b.Expire(ctx, db, 0)
		return err
	}, true)
	if expiredAll && expired != int64(s.held) {
		t.Errorf("Expire(0) by B expired %d tasks, want A's %d Active tasks in every topic", expired, s.held)
	}
	var repolled int
	call("Poll of 5 by A in each of 200 topics", func(ctx context.Context) error {
		for _, topic := range s.rich {
			tasks, err := s.a.Poll(ctx, db, topic, scaleRepoll)
			if err != nil {
				return err
			}
			repolled += len(tasks)
		}
		return nil
	})
	if repolled != len(s.rich)*scaleRepoll {
		t.Errorf("A polled %d tasks again, want %d", repolled, len(s.rich)*scaleRepoll)
	}
	var revivals []taskapi.Revival
	wantRevived := 1 + scaleRichPoll - scaleRichDone
	if call("Revive (reset) of the Expired tasks of one topic", func(ctx context.Context) (err error) {
		revivals, err = s.b.Revive(ctx, db, s.rich[0], taskapi.ReviveReset, taskapi.Expired, taskapi.Unbounded, 100)
		return err
	}) && expiredAll && len(revivals) != wantRevived {
		t.Errorf("Revive of the Expired tasks of %s = %d revivals, want %d", s.rich[0], len(revivals), wantRevived)
	}
	var counts map[string]map[taskapi.State]taskapi.Summary
	if call("Count of every topic", func(ctx context.Context) (err error) {
		counts, err = s.b.Count(ctx, db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
		return err
	}) {
		missing := 0
		for _, topic := range s.topics {
			if _, ok := counts[topic]; !ok {
				missing++
			}
		}
		if len(counts) != scaleTopics || missing != 0 {
			t.Errorf("Count of every topic lists %d topics, %d of ours missing; want all %d", len(counts), missing, scaleTopics)
		}
		if n := sum(counts); n != s.total {
			t.Errorf("Count of every topic counts %d tasks, want %d", n, s.total)
		}
		if expiredAll {
			for state, want := range map[taskapi.State]int{
				taskapi.Active:  repolled,
				taskapi.Expired: s.held - len(revivals),
				taskapi.Ready:   s.ready - repolled + len(revivals),
			} {
				if n := sum(counts, state); n != want {
					t.Errorf("Count of every topic counts %d %v tasks, want %d", n, state, want)
				}
			}
		}
	}
	if call("Count of one topic", func(ctx context.Context) (err error) {
		counts, err = s.b.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: s.topics[1]}, taskapi.Unbounded)
		return err
	}) && (len(counts) != 1 || sum(counts) != 1) {
		t.Errorf("Count of %s = %v, want its one task", s.topics[1], counts)
	}
	var results map[string]map[taskapi.Result]int64
	if call("Results of every topic", func(ctx context.Context) (err error) {
		results, err = s.b.Results(ctx, db, time.Time{}, time.Time{})
		return err
	}) {
		n := 0
		for _, byResult := range results {
			for _, count := range byResult {
				n += int(count)
			}
		}
		if len(results) != scaleTopics || n != s.finished {
			t.Errorf("Results lists %d topics and %d completed tasks, want %d and %d", len(results), n, scaleTopics, s.finished)
		}
	}
	var last int64
	call("Push of 1 task and of 150 tasks", func(ctx context.Context) error {
		if _, err := s.b.Push(ctx, db, s.topics[2], taskapi.Append, taskapi.Creation{Identifier: "late"}); err != nil {
			return err
		}
		creations := make([]taskapi.Creation, 150)
		for i := range creations {
			creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("late-%d", i)}
		}
		tasks, err := s.b.Push(ctx, db, s.rich[5], taskapi.Append, creations...)
		if err == nil {
			last = tasks[len(tasks)-1].Sequence
		}
		return err
	})
	var resolved int64
	if call("Resolve (preceding) over every topic", func(ctx context.Context) (err error) {
		resolved, err = s.b.Resolve(ctx, db, time.Now().Add(24*time.Hour), true)
		return err
	}) && last != 0 && resolved != last {
		t.Errorf("Resolve of tomorrow, preceding = %d, want the last task pushed, %d", resolved, last)
	}
	if call("Resolve (following) over every topic", func(ctx context.Context) (err error) {
		resolved, err = s.b.Resolve(ctx, db, time.Now().Add(-24*time.Hour), false)
		return err
	}) && resolved != s.first {
		t.Errorf("Resolve of yesterday, following = %d, want the first task, %d", resolved, s.first)
	}
	var purged int64
	if call("repo.PurgeBefore of one topic", func(ctx context.Context) (err error) {
		purged, err = s.b.PurgeBefore(ctx, db, s.rich[1], time.Now().Add(24*time.Hour))
		return err
	}) && purged != scaleRichDone {
		t.Errorf("PurgeBefore of %s purged %d tasks, want its %d completed", s.rich[1], purged, scaleRichDone)
	}
	if call("taskapi.PurgeBefore of one topic", func(ctx context.Context) (err error) {
		purged, err = taskapi.PurgeBefore[taskpg.DB](ctx, s.b, db, s.rich[6], time.Now().Add(24*time.Hour))
		return err
	}) && purged != scaleRichDone {
		t.Errorf("taskapi.PurgeBefore of %s purged %d tasks, want its %d completed", s.rich[6], purged, scaleRichDone)
	}
	var page []taskapi.Info
	if call("PageAt of one topic", func(ctx context.Context) (err error) {
		page, err = s.b.PageAt(ctx, db, s.rich[2], taskapi.Listing{}, time.Now().Add(-24*time.Hour), 10, taskapi.Forward)
		return err
	}) && len(page) != 10 {
		t.Errorf("PageAt of %s = %d tasks, want 10", s.rich[2], len(page))
	}
	if call("Purge of one topic", func(ctx context.Context) (err error) {
		purged, err = s.b.Purge(ctx, db, s.rich[3], taskapi.Unbounded)
		return err
	}) && purged != scaleRichDone {
		t.Errorf("Purge of %s purged %d tasks, want its %d completed", s.rich[3], purged, scaleRichDone)
	}
	if call("PurgeAll of one topic", func(ctx context.Context) error {
		return s.b.PurgeAll(ctx, db, s.rich[4])
	}) {
		counts, err := s.b.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: s.rich[4]}, taskapi.Unbounded)
		if err != nil || len(counts) != 1 || len(counts[s.rich[4]]) != 0 {
			t.Errorf("Count of %s after PurgeAll = %v, %v; want the topic without tasks", s.rich[4], counts, err)
		}
	}
	call("Refresh of every topic", func(ctx context.Context) error { return s.b.Refresh(ctx, db) }, true)
	if call("PurgeOwners(0) by B", func(ctx context.Context) (err error) {
		purged, err = s.b.PurgeOwners(ctx, db, 0)
		return err
	}) && purged != 1 {
		t.Errorf("PurgeOwners(0) by B purged %d owners, want 1 (gone; A holds tasks)", purged)
	}
	restarted, err := taskpg.New("a")
	if err != nil {
		t.Fatal(err)
	}
	if call("Register of a new value of A, which holds tasks (10,000 topics)", func(ctx context.Context) error {
		_, err := restarted.Register(ctx, db)
		return err
	}, true) {
		counts, err := s.b.Count(ctx, db, taskapi.Total, taskapi.Counting{States: []taskapi.State{taskapi.Active}}, taskapi.Unbounded)
		if err != nil || sum(counts) != 0 {
			t.Errorf("Count of Active tasks after A registered again = %d, %v; want none: the new value takes over A's tasks", sum(counts), err)
		}
	}
	call("Heartbeat and Owners", func(ctx context.Context) error {
		if err := restarted.Heartbeat(ctx, db); err != nil {
			return err
		}
		_, err := s.b.Owners(ctx, db, time.Hour)
		return err
	})
	if call("Destroy of three topics", func(ctx context.Context) error {
		for _, topic := range s.topics[3:6] {
			if existed, err := s.b.Destroy(ctx, db, topic); err != nil || !existed {
				return fmt.Errorf("Destroy(%s) = %v, %v", topic, existed, err)
			}
		}
		return nil
	}) {
		topics, err := s.b.Topics(ctx, db)
		if err != nil || len(topics) != scaleTopics-3 {
			t.Errorf("Topics after Destroy = %d topics, %v; want %d", len(topics), err, scaleTopics-3)
		}
	}
}
