package taskproc_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A connection that goes silent (packets dropped, sockets open) never holds
// a task of a live owner, nor blocks it for another process, for long:
// every statement of the runtime has a deadline, and its transactions are
// bounded on the server. The tests below run a Client, whose heartbeats go
// on, on a database reached through a proxy that freezes one connection
// (netproxy.FreezeAt) at the kth statement of the Client that is not a
// heartbeat, for every k up to the settlement of the run's task, Before
// the statement reaches the server and After it did: polls, settlements,
// the keeper's sweeps, reconciliations. Every run must end with the task
// settled by its handler, once, its effect committed once, and the owner
// never fenced: the frozen connection costs a statement, not the owner.

// Times of the freeze tests: the expiry is the one the outside review ran
// with, and the runtime's bound on its statements is half of it.
const (
	freezeHeartbeat = 200 * time.Millisecond
	freezeExpiry    = 2 * time.Second
)

// freezeRig opens fresh databases reached through a proxy that freezes.
type freezeRig[Tx any] struct {
	rigOps[Tx]
	// open returns a fresh, migrated database of t's own, directly and
	// through a proxy of its own, and the proxy.
	open func(t *testing.T) (direct, proxied Tx, proxy *netproxy.Proxy)
}

// pgFreezeRig is taskpg on PostgreSQL.
func pgFreezeRig() *freezeRig[taskpg.DB] {
	return &freezeRig[taskpg.DB]{
		open: func(t *testing.T) (taskpg.DB, taskpg.DB, *netproxy.Proxy) {
			dbURL := testdb.PostgresURL(t)
			pool, proxy := proxiedPool(t, dbURL)
			return testdb.Pool(t, dbURL, 4), pool, proxy
		},
		rigOps: pgOps("public.frozen_effect"),
	}
}

// ansiPostgresFreezeRig is taskansi on PostgreSQL, through pgx's
// database/sql driver.
func ansiPostgresFreezeRig() *freezeRig[taskansi.DB] {
	open := func(t *testing.T, dbURL string) *sql.DB {
		cfg, err := pgx.ParseConfig(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["search_path"] = ""
		db := stdlib.OpenDB(*cfg)
		keepWarm(db)
		t.Cleanup(func() { db.Close() })
		return db
	}
	return ansiFreezeRig(taskansi.Postgres, nil, "public.frozen_effect", "$1", func(t *testing.T) (*sql.DB, *sql.DB, *netproxy.Proxy) {
		dbURL := testdb.PostgresURL(t)
		proxy, proxied, err := netproxy.ForURL(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proxy.Close() })
		return open(t, dbURL), open(t, proxied), proxy
	})
}

// keepWarm keeps up to freezeIdle connections of db open between uses,
// as a service's pool would: database/sql keeps two by default, so that a
// heartbeat after a burst had to connect anew, and on a machine under load
// connecting took longer than the heartbeat's deadline (half the expiry):
// the owner fenced for want of a connection, not for the frozen one.
func keepWarm(db *sql.DB) { db.SetMaxIdleConns(freezeIdle) }

// freezeIdle is how many idle connections the freeze tests' taskansi
// pools keep: more than a Client of one topic uses at once.
const freezeIdle = 8

// ansiFreezeRig is taskansi of dialect on the databases open returns.
func ansiFreezeRig(dialect taskansi.Dialect, opts *sql.TxOptions, effect, param string, open func(t *testing.T) (*sql.DB, *sql.DB, *netproxy.Proxy)) *freezeRig[taskansi.DB] {
	return &freezeRig[taskansi.DB]{
		rigOps: ansiOps(dialect, opts, effect, param),
		open: func(t *testing.T) (taskansi.DB, taskansi.DB, *netproxy.Proxy) {
			direct, proxied, proxy := open(t)
			return direct, proxied, proxy
		},
	}
}

// A freezePath is a handler of the run's task: Sequential (its
// settlement is one statement) or ParallelTx (a transaction with the
// user's effect), and the rows of the user's that a task so settled has.
type freezePath[Tx any] struct {
	handler func(rig *freezeRig[Tx], runs *atomic.Int32) taskproc.Handler
	effects int
}

// freezePaths are the ways a task is settled that the tests freeze.
func freezePaths[Tx any]() map[string]freezePath[Tx] {
	return map[string]freezePath[Tx]{
		"Sequential": {handler: func(_ *freezeRig[Tx], runs *atomic.Int32) taskproc.Handler {
			return taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
				runs.Add(1)
				return taskapi.Decision{Result: taskapi.Success}, nil
			})
		}},
		"ParallelTx": {effects: 1, handler: func(rig *freezeRig[Tx], runs *atomic.Int32) taskproc.Handler {
			return taskproc.ParallelTx(2, func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error) {
				runs.Add(1)
				err := rig.exec(ctx, tx, "INSERT INTO "+rig.effect+" (seq) VALUES ("+rig.param+")", task.Sequence)
				return taskapi.Decision{Result: taskapi.Success}, err
			})
		}},
	}
}

// uncounted reports whether s is not one of the statements that k counts:
// a heartbeat, or the statement that shares its round trip, so that k
// counts the rest of the Client's statements; or a statement of the
// user's function, whose own statements are bounded by its own context
// (the runtime does not bound its run: a call of its that hangs holds its
// task until it returns, docs/guarantees.md).
func uncounted(s netproxy.Statement) bool {
	return strings.Contains(s.SQL, "SET heartbeat") || strings.Contains(s.SQL, "plan_cache_mode") ||
		strings.Contains(s.SQL, "frozen_effect")
}

// freezeRun is what one run with a freeze saw.
type freezeRun struct {
	fired     bool
	at        netproxy.Statement
	statement int // the non-heartbeat statements the Client sent until its task was settled
	took      time.Duration
}

// nthCounted matches the kth statement counted (see uncounted), none for
// k = 0, and counts the statements it sees into counted.
func nthCounted(k int, counted *atomic.Int32) func(netproxy.Statement) bool {
	return func(s netproxy.Statement) bool {
		if uncounted(s) {
			return false
		}
		return int(counted.Add(1)) == k
	}
}

// live is a Client of the owner "live", started on a fresh database of a
// freeze rig that it reaches through the rig's proxy, with a table of the
// user's effects, and what the tests read of it: the database directly,
// the proxy, the events the Client told, how often its function ran.
type live[Tx any] struct {
	c      *taskproc.Client[Tx]
	repo   fullRepo[Tx]
	direct Tx
	proxy  *netproxy.Proxy
	events *recorder
	runs   atomic.Int32
}

// startLive starts a live Client with handler, made by path, and stops it
// when t ends.
func startLive[Tx any](t *testing.T, rig *freezeRig[Tx], path freezePath[Tx]) *live[Tx] {
	t.Helper()
	ctx := t.Context()
	l := &live[Tx]{events: &recorder{}}
	var proxied Tx
	l.direct, proxied, l.proxy = rig.open(t)
	repo, err := rig.newRepo("live")
	if err == nil {
		l.repo = repo
		_, err = repo.Initialize(ctx, l.direct, topic)
	}
	if err == nil {
		err = rig.exec(ctx, l.direct, "CREATE TABLE "+rig.effect+" (seq bigint NOT NULL)")
	}
	if err == nil {
		// WithSize(1): a loop of a per-task handler polls beside its batch
		// while it holds fewer tasks than its size, and the COMMIT of such a
		// poll would be frozen in place of the handler's. The tests push
		// one task at a time.
		l.c, err = taskproc.New(repo, rig.transact(proxied), taskproc.WithSize(1), taskproc.WithHeartbeat(freezeHeartbeat), taskproc.WithExpiry(freezeExpiry),
			taskproc.WithObserver(l.events), taskproc.WithLogger(slog.New(slog.DiscardHandler)))
	}
	if err == nil {
		err = l.c.Handle(topic, path.handler(rig, &l.runs))
	}
	if err == nil {
		err = l.c.Start(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopWithin(t, l.c.Stop) })
	return l
}

// push pushes one task and wakes the Client.
func (l *live[Tx]) push(t *testing.T) taskapi.Task {
	t.Helper()
	pushed, err := l.repo.Push(t.Context(), l.direct, topic, taskapi.Append, taskapi.Creation{Identifier: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	l.c.Resume(topic)
	return pushed[0]
}

// unfenced fails t when the owner fenced itself.
func (l *live[Tx]) unfenced(t *testing.T, what string) {
	t.Helper()
	if fenced := l.events.of(taskproc.EventFenced); len(fenced) > 0 {
		t.Errorf("%s: the owner fenced itself: %v; the runtime told: %s", what, fenced[0].Err, l.events.summary())
	}
}

// freezeOnce runs a Client with path's handler on a fresh database whose
// proxy freezes the connection of the first statement that match (given
// counted, see nthCounted) matches, pushes a task and waits until it is
// settled. It checks that the task ended Succeeded by the live owner, with
// its effect once, and that the owner never fenced itself.
func freezeOnce[Tx any](t *testing.T, rig *freezeRig[Tx], path freezePath[Tx], match func(*atomic.Int32) func(netproxy.Statement) bool, mode netproxy.Mode) freezeRun {
	ctx := t.Context()
	l := startLive(t, rig, path)
	var counted atomic.Int32
	l.proxy.FreezeAt(match(&counted), mode)
	began := time.Now()
	task := l.push(t)
	var info taskapi.Info
	settled := func() bool {
		var err error
		if info, _, err = l.repo.Lookup(ctx, l.direct, topic, task.Sequence); err != nil {
			t.Fatal(err)
		}
		return info.State != taskapi.Ready && info.State != taskapi.Active
	}
	for deadline := time.Now().Add(patience); !settled(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			at, fired := l.proxy.Fired()
			t.Fatalf("frozen %v at %v (fired: %v): the task is %v of %q after %v; the runtime told: %s", mode, at, fired, info.State, info.Owner, patience, l.events.summary())
		}
	}
	run := freezeRun{took: time.Since(began), statement: int(counted.Load())}
	run.at, run.fired = l.proxy.Fired()
	what := fmt.Sprintf("frozen %v at %v", mode, run.at)
	if info.State != taskapi.Succeeded || info.Owner != l.c.Owner() {
		t.Errorf("%s: task %v of %q (%q), want SUCCEEDED by the live owner %q", what, info.State, info.Owner, info.Output, l.c.Owner())
	}
	rows, err := rig.count(ctx, l.direct, "SELECT count(*) FROM "+rig.effect+" WHERE seq = "+rig.param, task.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if rows != path.effects {
		t.Errorf("%s: the task has %d rows of the user's, want %d", what, rows, path.effects)
	}
	l.unfenced(t, what)
	return run
}

// TestAFrozenPollOrCommitHoldsNoTask freezes, on taskpg, the statements
// whose silence cost the outside review its tasks: a poll, Before and
// After (its transaction's locks then stay on the server until it ends
// the session), and the COMMIT of a ParallelTx transaction. Every
// statement of a run, on every backend, is frozen in turn by the heavy
// TestAFrozenConnectionHoldsNoTask (freeze_heavy_test.go).
func TestAFrozenPollOrCommitHoldsNoTask(t *testing.T) {
	rig := pgFreezeRig()
	paths := freezePaths[taskpg.DB]()
	poll := func(*atomic.Int32) func(netproxy.Statement) bool {
		return func(s netproxy.Statement) bool { return strings.Contains(s.SQL, "WITH polled AS") }
	}
	commit := func(*atomic.Int32) func(netproxy.Statement) bool {
		var inserted atomic.Bool
		return func(s netproxy.Statement) bool {
			if strings.Contains(s.SQL, "frozen_effect") {
				inserted.Store(true)
			}
			return inserted.Load() && strings.EqualFold(strings.TrimSpace(s.SQL), "commit")
		}
	}
	for _, mode := range []netproxy.Mode{netproxy.Before, netproxy.After} {
		t.Run("poll/"+mode.String(), func(t *testing.T) {
			t.Parallel()
			if run := freezeOnce(t, rig, paths["Sequential"], poll, mode); !run.fired {
				t.Error("no poll was frozen")
			}
		})
		t.Run("commit/"+mode.String(), func(t *testing.T) {
			t.Parallel()
			if run := freezeOnce(t, rig, paths["ParallelTx"], commit, mode); !run.fired {
				t.Error("no COMMIT was frozen")
			}
		})
	}
}

// TestAFrozenReadBackIsReadAgain freezes the COMMIT of a ParallelTx
// transaction, and then the first statement of the read-back that follows
// it: the read-back gives up by its bound and reads again on another
// connection, so that the task is settled once, with its effect once, and
// its function runs again only when the COMMIT did not go through.
func TestAFrozenReadBackIsReadAgain(t *testing.T) {
	t.Run("taskpg", func(t *testing.T) { t.Parallel(); readBackFrozen(t, pgFreezeRig()) })
	t.Run("taskansi-postgres", func(t *testing.T) { t.Parallel(); readBackFrozen(t, ansiPostgresFreezeRig()) })
}

// readBackFrozen runs TestAFrozenReadBackIsReadAgain on rig, Before and
// After the COMMIT.
func readBackFrozen[Tx any](t *testing.T, rig *freezeRig[Tx]) {
	for _, mode := range []netproxy.Mode{netproxy.Before, netproxy.After} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			l := startLive(t, rig, freezePaths[Tx]()["ParallelTx"])
			// The COMMIT is the first after the function's INSERT.
			var inserted atomic.Bool
			l.proxy.FreezeAt(func(s netproxy.Statement) bool {
				if strings.Contains(s.SQL, "frozen_effect") {
					inserted.Store(true)
				}
				return inserted.Load() && strings.EqualFold(strings.TrimSpace(s.SQL), "commit")
			}, mode)
			readBack := make(chan netproxy.Statement, 1)
			go func() {
				for {
					if at, fired := l.proxy.Fired(); fired {
						l.proxy.FreezeAt(func(s netproxy.Statement) bool {
							return strings.Contains(strings.ToLower(s.SQL), "coalesce(reference, '')")
						}, netproxy.Before)
						readBack <- at
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
			}()
			task := l.push(t)
			if at := within(t, "the frozen COMMIT", readBack); !strings.EqualFold(at.SQL, "commit") {
				t.Fatalf("froze %v, want the COMMIT", at)
			}
			eventually(t, "the read-back frozen", func() bool { _, fired := l.proxy.Fired(); return fired })
			var info taskapi.Info
			var err error
			eventually(t, "the task settled", func() bool {
				info, _, err = l.repo.Lookup(ctx, l.direct, topic, task.Sequence)
				return err == nil && info.State != taskapi.Active && info.State != taskapi.Ready
			})
			stopWithin(t, l.c.Stop) // no run after the count
			rows, err := rig.count(ctx, l.direct, "SELECT count(*) FROM "+rig.effect+" WHERE seq = "+rig.param, task.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			want := int32(1)
			if mode == netproxy.Before {
				want = 2 // the COMMIT never reached the server: the function ran again
			}
			if info.State != taskapi.Succeeded || rows != 1 || l.runs.Load() != want {
				t.Errorf("the task is %v (%q) with %d effects after %d runs, want SUCCEEDED with one after %d", info.State, info.Output, rows, l.runs.Load(), want)
			}
			l.unfenced(t, "the read-back frozen")
		})
	}
}

// TestAFrozenHeartbeatCostsAnAttemptNotTheOwner freezes six heartbeats in
// a row, Before and After in turn: each attempt gives up by its bound (a
// heartbeat interval) and the next goes through on another connection,
// well within the expiry, so that the owner never fences itself and its
// work goes on.
func TestAFrozenHeartbeatCostsAnAttemptNotTheOwner(t *testing.T) {
	ctx := t.Context()
	l := startLive(t, pgFreezeRig(), freezePaths[taskpg.DB]()["Sequential"])
	heartbeat := func(s netproxy.Statement) bool {
		return strings.HasPrefix(strings.TrimSpace(s.SQL), "UPDATE") && strings.Contains(s.SQL, "SET heartbeat")
	}
	beat := func() (at time.Time) {
		if err := l.direct.QueryRow(ctx, "SELECT heartbeat FROM public.task_owner WHERE owner = 'live'").Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	for i := range 6 {
		mode := []netproxy.Mode{netproxy.Before, netproxy.After}[i%2]
		l.proxy.FreezeAt(heartbeat, mode)
		eventually(t, fmt.Sprintf("heartbeat %d frozen %v", i+1, mode), func() bool { _, fired := l.proxy.Fired(); return fired })
		// The next freeze waits for a heartbeat to go through after this
		// one: frozen one after the other, the attempts would be a
		// database that does not answer for the expiry, which fences.
		frozen := beat()
		eventually(t, "a heartbeat after the frozen one", func() bool { return beat().After(frozen) })
		l.push(t)
	}
	eventually(t, "six tasks done", func() bool { return l.runs.Load() == 6 })
	l.unfenced(t, "six heartbeats frozen")
	if l.proxy.Frozen() == 0 {
		t.Error("no connection is frozen: the test froze nothing")
	}
}

// TestAFrozenLeaderIsReplaced freezes a leader's renewal, Before and After
// (its transaction then holds the term's row on the server until the
// server ends it), and the COMMIT of one of its settlements, Before (the
// transaction then holds the term's lock shared): the renewal gives up by
// its bound, the leader gives its term up, and a new term begins (the
// other process's, or the leader's again, whichever asks first); the
// settlement is read back and written again. Every task is settled once,
// its effect once, and no two processes lead at once.
func TestAFrozenLeaderIsReplaced(t *testing.T) {
	renewal := func() func(netproxy.Statement) bool {
		return func(s netproxy.Statement) bool { return strings.Contains(s.SQL, "GREATEST(expires") }
	}
	commit := func() func(netproxy.Statement) bool {
		var inserted atomic.Bool
		return func(s netproxy.Statement) bool {
			if strings.Contains(s.SQL, "frozen_effect") {
				inserted.Store(true)
			}
			return inserted.Load() && strings.EqualFold(strings.TrimSpace(s.SQL), "commit")
		}
	}
	for name, c := range map[string]struct {
		match    func() func(netproxy.Statement) bool // a matcher of a run's own
		mode     netproxy.Mode
		replaced bool // a new term must begin
	}{
		"renewal/before": {renewal, netproxy.Before, true},
		"renewal/after":  {renewal, netproxy.After, true},
		"commit/before":  {commit, netproxy.Before, false},
	} {
		t.Run("taskpg/"+name, func(t *testing.T) {
			t.Parallel()
			leaderFrozen(t, pgFreezeRig(), c.match(), c.mode, c.replaced)
		})
		t.Run("taskansi-postgres/"+name, func(t *testing.T) {
			t.Parallel()
			leaderFrozen(t, ansiPostgresFreezeRig(), c.match(), c.mode, c.replaced)
		})
	}
}

// leaderFrozen runs TestAFrozenLeaderIsReplaced's case: the freeze match
// in mode on the connections of the first leader, and whether a new term
// must begin afterwards.
func leaderFrozen[Tx any](t *testing.T, rig *freezeRig[Tx], match func(netproxy.Statement) bool, mode netproxy.Mode, replaced bool) {
	const tasks = 100
	ctx := t.Context()
	direct, proxied, proxy := rig.open(t)
	setup, err := rig.newRepo("setup")
	if err == nil {
		_, err = setup.Initialize(ctx, direct, topic)
	}
	if err == nil {
		err = rig.exec(ctx, direct, "CREATE TABLE "+rig.effect+" (seq bigint NOT NULL)")
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &spans{}
	var clients []*taskproc.Client[Tx]
	defer func() { // stopped before the spans are read, as a failure stops them too
		for _, c := range clients {
			stopWithin(t, c.Stop)
		}
		s.wg.Wait()
		for _, o := range s.overlaps() {
			t.Error(o)
		}
	}()
	start := func(owner string, db Tx) *taskproc.Client[Tx] {
		repo, err := rig.newRepo(owner)
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		c, err := taskproc.New[Tx](repo, rig.transact(db), taskproc.WithHeartbeat(freezeHeartbeat), taskproc.WithExpiry(freezeExpiry),
			taskproc.WithLogger(slog.New(slog.DiscardHandler)))
		if err == nil {
			err = c.Handle(topic, freezePaths[Tx]()["ParallelTx"].handler(rig, &runs),
				taskproc.WithLeadership(termTTL), taskproc.WithLeaderCallback(s.callback(owner)), taskproc.WithSize(10))
		}
		if err == nil {
			err = c.Start(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	first := start("first", proxied)
	eventually(t, "the first leads", func() bool { return first.Manager(topic).Leading() })
	start("second", direct)
	proxy.FreezeAt(match, mode)
	creations := make([]taskapi.Creation, tasks)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprint("led-", i)}
	}
	if _, err := setup.Push(ctx, direct, topic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the freeze", func() bool { _, fired := proxy.Fired(); return fired })
	if replaced {
		eventually(t, "a term after the frozen one", func() bool { return s.terms() > 1 })
	}
	eventually(t, "every task settled", func() bool {
		n, err := rig.count(ctx, direct, "SELECT count(*) FROM public.task WHERE topic = "+rig.param+" AND state = 6", topic)
		return err == nil && n == tasks
	})
	rows, err := rig.count(ctx, direct, "SELECT count(DISTINCT seq) FROM "+rig.effect)
	if err == nil {
		var all int
		all, err = rig.count(ctx, direct, "SELECT count(*) FROM "+rig.effect)
		if all != rows || rows != tasks {
			t.Errorf("%d effects of %d tasks, want one of each of %d", all, rows, tasks)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
