package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// proxiedPool opens a pool on dbURL whose connections go through a proxy
// that the test can cut.
func proxiedPool(t *testing.T, dbURL string) (*pgxpool.Pool, *netproxy.Proxy) {
	t.Helper()
	proxy, proxied, err := netproxy.ForURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return openPool(t, proxied), proxy
}

// openPool opens a pool with an empty search_path, closed when t ends.
func openPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// successor is the repository of a taskpg Client's next owner.
func successor(owner string) (taskproc.Repository[taskpg.DB], error) {
	return taskpg.New(owner)
}

// TestAnOwnerCutOffFencesItselfAndNoStaleClaimIsCompleted runs two
// processes' worth of runtimes on one database. A holds a batch in its
// handler when a proxy cuts it off from the database for longer than the
// expiry: B expires A's tasks, revives and completes them; A fences itself
// before B expires them (the gap is logged), its late completion is refused, and once the database answers again it
// goes on under a new owner name. Every task ends Succeeded once, and none
// of the tasks A held is completed by A's old identity.
func TestAnOwnerCutOffFencesItselfAndNoStaleClaimIsCompleted(t *testing.T) {
	t.Run("in its handler", func(t *testing.T) { cutOffOwner(t, 0) })
	// A's first batch is completed, and its result waits in a settlement
	// window that outlasts the test: the fence leaves it unwritten.
	t.Run("in its settlement window", func(t *testing.T) { cutOffOwner(t, taskproc.MaxSettleWindow) })
}

// cutOffOwner is TestAnOwnerCutOffFencesItselfAndNoStaleClaimIsCompleted
// with A's settlement window.
func cutOffOwner(t *testing.T, window time.Duration) {
	const (
		n         = 200
		heartbeat = 100 * time.Millisecond
		expiry    = time.Second
	)
	dbURL := testdb.PostgresURL(t)
	direct := openPool(t, dbURL)
	cutOff, proxy := proxiedPool(t, dbURL)
	setupRepo, err := taskpg.New("setup")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setupRepo.Initialize(t.Context(), direct, topic); err != nil {
		t.Fatal(err)
	}
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", i)}
	}
	if _, err := setupRepo.Push(t.Context(), direct, topic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		decided = map[int64]string{} // sequence → the owner that decided it, once
		errs    []string
	)
	record := func(owner string, tasks []taskapi.Task) {
		mu.Lock()
		defer mu.Unlock()
		for _, task := range tasks {
			if before, ok := decided[task.Sequence]; ok {
				errs = append(errs, fmt.Sprintf("task %d completed by %s and %s", task.Sequence, before, owner))
			}
			decided[task.Sequence] = owner
		}
	}
	held, late := make(chan []taskapi.Task, 1), make(chan error, 1)
	var firstBatch sync.Once
	events := &recorder{}
	opts := []taskproc.ClientOption{taskproc.WithHeartbeat(heartbeat), taskproc.WithExpiry(expiry), taskproc.WithSize(20),
		taskproc.WithPause(50 * time.Millisecond)}

	repoA, _ := taskpg.New("proc-a")
	a, err := taskproc.New[taskpg.DB](repoA, taskpg.Transact(cutOff), append(opts, taskproc.WithObserver(events),
		taskproc.WithSuccessor(successor), taskproc.WithGrace(time.Second), taskproc.WithSettleWindow(window))...)
	if err != nil {
		t.Fatal(err)
	}
	handle(t, a, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		blocked := false
		firstBatch.Do(func() {
			blocked = true
			held <- b.Tasks()
			if window == 0 {
				<-ctx.Done() // fencing ends the batch's context
			}
			late <- b.Complete(every(b, taskapi.Success))
		})
		if blocked {
			return nil
		}
		err := b.Complete(every(b, taskapi.Success))
		if err == nil {
			record(a.Owner(), b.Tasks())
		}
		return err
	}))
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, a.Stop)
	stale := within(t, "A's first batch", held)

	repoB, _ := taskpg.New("proc-b")
	var expired atomic.Pointer[time.Time] // when B's first Expire that took tasks (A's) returned
	hookedB := &hooked[taskpg.DB]{fullRepo: repoB}
	hookedB.expire = func(expire func() (int64, error)) (int64, error) {
		n, err := expire()
		if now := time.Now(); n > 0 {
			expired.CompareAndSwap(nil, &now)
		}
		return n, err
	}
	b, err := taskproc.New[taskpg.DB](hookedB, taskpg.Transact(direct), append(opts, taskproc.WithRevival())...)
	if err != nil {
		t.Fatal(err)
	}
	handle(t, b, topic, taskproc.HandlerFunc(func(ctx context.Context, batch *taskproc.Batch) error {
		err := batch.Complete(every(batch, taskapi.Success))
		if err == nil {
			record("proc-b", batch.Tasks())
		}
		return err
	}))
	proxy.Cut()
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, b.Stop)

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, patience)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	eventually("A fences itself", func() bool { return len(events.of(taskproc.EventFenced)) > 0 })
	eventually("B expires A's tasks", func() bool { return expired.Load() != nil })
	// A cut-off process fences itself before another can expire it.
	if fenced, took := events.when(taskproc.EventFenced)[0], *expired.Load(); fenced.Before(took) {
		t.Logf("A fenced itself %v before B expired its tasks", took.Sub(fenced))
	} else {
		t.Errorf("A fenced itself %v after B expired its tasks, want before", fenced.Sub(took))
	}
	// A completion made after the fence finds the batch settled; one that
	// waited in the window is told that the fence gave it up unwritten.
	want := taskproc.ErrSettled
	if window > 0 {
		want = taskproc.ErrFenced
	}
	if err := within(t, "A's late completion", late); !errors.Is(err, want) {
		t.Errorf("the fenced owner's late completion = %v, want %v", err, want)
	}
	succeeded := func() int {
		counts, err := setupRepo.Count(t.Context(), direct, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		return int(counts[topic][taskapi.Succeeded].Count)
	}
	eventually("B completes every task, A's expired ones too", func() bool { return succeeded() == n })
	proxy.Restore()
	eventually("A recovers under a new owner", func() bool { return len(events.of(taskproc.EventRecovered)) > 0 })
	if owner := a.Owner(); owner != "proc-a#2" {
		t.Errorf("A goes on as %q, want proc-a#2", owner)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	if len(decided) != n {
		t.Errorf("%d tasks completed, want %d", len(decided), n)
	}
	for _, task := range stale {
		if owner := decided[task.Sequence]; owner == "proc-a" || owner == "" {
			t.Errorf("task %d that the fenced owner held was completed by %q", task.Sequence, owner)
		}
		info, _, err := setupRepo.Lookup(t.Context(), direct, topic, task.Sequence)
		if err != nil || info.State != taskapi.Succeeded || info.Owner == "proc-a" {
			t.Errorf("task %d is %v of %q (%v), want SUCCEEDED by another owner", task.Sequence, info.State, info.Owner, err)
		}
	}
}

// Without a successor, an owner that recovers from fencing goes on under
// its own name and first gives back the tasks it gave up, which it then
// processes itself.
func TestAnOwnerWithoutASuccessorReleasesWhatItGaveUp(t *testing.T) {
	dbURL := testdb.PostgresURL(t)
	direct := openPool(t, dbURL)
	cutOff, proxy := proxiedPool(t, dbURL)
	repo, err := taskpg.New("solo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(t.Context(), direct, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(t.Context(), direct, topic, taskapi.Append, taskapi.Creation{Identifier: "a"}, taskapi.Creation{Identifier: "b"}); err != nil {
		t.Fatal(err)
	}
	events := &recorder{}
	// An expiry of a second: its half bounds every statement, Start's
	// registration too, which 150 ms did not leave room for beside CI's
	// heavy tests.
	c, err := taskproc.New[taskpg.DB](repo, taskpg.Transact(cutOff), taskproc.WithHeartbeat(100*time.Millisecond),
		taskproc.WithExpiry(time.Second), taskproc.WithObserver(events), taskproc.WithPause(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	var once sync.Once
	handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(held)
			<-ctx.Done()
			return ctx.Err()
		}
		return b.Complete(every(b, taskapi.Success))
	}))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, c.Stop)
	within(t, "the held batch", held)
	proxy.Cut()
	deadline := time.Now().Add(patience)
	for len(events.of(taskproc.EventFenced)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no fencing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	proxy.Restore()
	for {
		counts, err := repo.Count(t.Context(), direct, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		if counts[topic][taskapi.Succeeded].Count == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks %v, want both done by the recovered owner", counts[topic])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.Owner() != "solo" {
		t.Errorf("the Client goes on as %q, want its own name", c.Owner())
	}
	if n := len(events.of(taskproc.EventAbandoned)); n != 1 {
		t.Errorf("%d batches abandoned, want 1", n)
	}
}

// The keeper purges owners that have been silent for longer than the
// purge's duration and hold no Active task.
func TestTheKeeperPurgesDeadOwners(t *testing.T) {
	db := testdb.Postgres(t)
	ghost, err := taskpg.New("ghost")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ghost.Register(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	repo, err := taskpg.New("keeper")
	if err != nil {
		t.Fatal(err)
	}
	c, err := taskproc.New[taskpg.DB](repo, taskpg.Transact(db), taskproc.WithHeartbeat(20*time.Millisecond),
		taskproc.WithOwnerPurge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, c.Stop)
	deadline := time.Now().Add(patience)
	for {
		owners, err := repo.Owners(t.Context(), db, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(owners) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("owners %v still there, want the ghost purged", owners)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Three runtimes take part in the election of a topic's leader; the leader
// is cut off from the database. Another takes over once the term expired
// in the database, and the cut-off one's leadership ended before: never two
// at once.
func TestACutOffLeaderIsReplacedAndNeverTwoLeadAtOnce(t *testing.T) {
	const ttl = 600 * time.Millisecond
	dbURL := testdb.PostgresURL(t)
	direct := openPool(t, dbURL)
	cutOff, proxy := proxiedPool(t, dbURL)
	setup, _ := taskpg.New("setup")
	if _, err := setup.Initialize(t.Context(), direct, topic); err != nil {
		t.Fatal(err)
	}
	s := &spans{}
	var clients []*taskproc.Client[taskpg.DB]
	start := func(owner string, pool *pgxpool.Pool) *taskproc.Client[taskpg.DB] {
		repo, _ := taskpg.New(owner)
		c, err := taskproc.New[taskpg.DB](repo, taskpg.Transact(pool), taskproc.WithHeartbeat(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		handle(t, c, topic, taskproc.Sequential(succeed), taskproc.WithLeadership(ttl), taskproc.WithLeaderCallback(s.callback(owner)))
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	leading := func(c *taskproc.Client[taskpg.DB]) func() bool {
		return func() bool { return c.Manager(topic).Leading() }
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, patience)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := start("first", cutOff)
	wait("the first leads", leading(first))
	second, third := start("second", direct), start("third", direct)
	proxy.Cut()
	wait("another leads", func() bool { return leading(second)() || leading(third)() })
	wait("the cut-off one knows it lost", func() bool { return !leading(first)() })
	proxy.Restore()
	for _, c := range clients {
		stopWithin(t, c.Stop)
	}
	s.wg.Wait()
	for _, o := range s.overlaps() {
		t.Error(o)
	}
	if s.count() < 2 {
		t.Errorf("%d terms seen, want the cut-off leader's and its successor's", s.count())
	}
}
