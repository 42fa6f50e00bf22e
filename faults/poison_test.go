package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

const (
	poisonTopic   = "poison"
	poisonInput   = "poison" // the input that kills a worker
	poisonRescues = 2        // WithRescues of the test's keeper
	poisonOthers  = 10
	// poisonExpiry is the keeper's: a dead worker's task expires this long
	// after its last heartbeat. A live worker, which beats every 250 ms,
	// would have to miss six heartbeats in a row to be taken for dead.
	poisonExpiry = 1500 * time.Millisecond
)

// TestPoisonTaskFailsAfterItsRescues pushes a task whose handler kills its
// process (os.Exit), among others, and keeps starting consumer processes:
// each polls the poison task and dies. A keeper in the test process (a
// Client with WithRevival and WithRescues(2) whose Manager of the topic
// never claims) expires the task and rescues it. After two rescues, the
// third death's expiry ends the task with Failure and an output that says
// it was rescued 2 times: the keeper tells EventPoisoned and counts it in
// Stats().Poisoned, and no fourth process dies of it. The other tasks of
// the topic are not affected: a last process runs every one of them once,
// and none was ever rescued.
func TestPoisonTaskFailsAfterItsRescues(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	pool, repo := openFaultDB(t, url, poisonTopic)
	creations := []taskapi.Creation{{Identifier: "poison", Input: poisonInput}}
	for i := range poisonOthers {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("other-%d", i)})
	}
	pushed, err := repo.Push(ctx, pool, poisonTopic, taskapi.Append, creations...)
	if err != nil {
		t.Fatal(err)
	}
	poison := pushed[0]
	k := startPoisonKeeper(t, pool)
	args := []string{"-poison", poisonInput, "-size", "1", "-inflight", "1", "-revive=false"}
	deaths := 0
	for {
		w := startWorker(t, url, poisonTopic, fmt.Sprintf("poison-worker-%d", deaths), args...)
		awaitPoisonDeath(t, w, poison)
		deaths++
		info := awaitRescuedOrEnded(t, pool, repo, poison)
		if info.State == taskapi.Failed {
			break
		}
		if deaths > poisonRescues {
			t.Fatalf("the poison task was rescued after %d deaths (revived %d times), beyond WithRescues(%d): it kills process after process",
				deaths, info.Revivals, poisonRescues)
		}
	}
	last := startWorker(t, url, poisonTopic, "poison-worker-last", args...)
	awaitOthersSucceeded(t, pool, repo, poison)
	last.stop(t)
	k.stop(t)
	if deaths != poisonRescues+1 {
		t.Errorf("%d workers died of the poison task, want %d: one, and one after each rescue", deaths, poisonRescues+1)
	}
	info, _, err := repo.Lookup(ctx, pool, poisonTopic, poison.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("rescued %d times", poisonRescues); info.State != taskapi.Failed || info.Revivals != poisonRescues || !strings.Contains(info.Output, want) {
		t.Errorf("the poison task: %v, revived %d times, output %q; want Failed, revived %d times, an output that says %q",
			info.State, info.Revivals, info.Output, poisonRescues, want)
	}
	t.Logf("%d workers died of the poison task; its output: %s", deaths, info.Output)
	k.check(t, poison)
	checkOthers(t, ctx, pool, repo, poison)
}

// poisonKeeper is the keeper of the poison test: a Client whose Manager
// of the topic never claims, and what it told.
type poisonKeeper struct {
	client  *taskproc.Client[taskpg.DB]
	handled atomic.Int64 // calls of its handler, which never claims: none
	mu      sync.Mutex
	events  []taskproc.Event // EventRescued and EventPoisoned
}

// startPoisonKeeper starts the keeper: WithRevival and WithRescues, its
// Manager of the topic never claiming.
func startPoisonKeeper(t *testing.T, pool *pgxpool.Pool) *poisonKeeper {
	t.Helper()
	repo, err := taskpg.New("poison-keeper")
	if err != nil {
		t.Fatal(err)
	}
	k := &poisonKeeper{}
	observer := taskproc.ObserverFunc(func(e taskproc.Event) {
		if e.Kind == taskproc.EventRescued || e.Kind == taskproc.EventPoisoned {
			k.mu.Lock()
			k.events = append(k.events, e)
			k.mu.Unlock()
		}
	})
	k.client, err = taskproc.New(repo, taskpg.Transact(pool),
		taskproc.WithExpiry(poisonExpiry), taskproc.WithHeartbeat(100*time.Millisecond),
		taskproc.WithRevival(), taskproc.WithRescues(poisonRescues),
		taskproc.WithObserver(observer), taskproc.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	err = k.client.Handle(poisonTopic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		k.handled.Add(1)
		return b.Release()
	}))
	if err != nil {
		t.Fatal(err)
	}
	k.client.Manager(poisonTopic).SetClaiming(false)
	if err := k.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.stop(t) })
	return k
}

// stop stops the keeper's Client; again does nothing.
func (k *poisonKeeper) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), workerPatience)
	defer cancel()
	if err := k.client.Stop(ctx); err != nil {
		t.Errorf("stop the keeper: %v", err)
	}
}

// check checks that the keeper rescued the poison task, and it alone,
// WithRescues times, and then ended it, once, as poisoned.
func (k *poisonKeeper) check(t *testing.T, poison taskapi.Task) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	var rescued, poisoned int
	for _, e := range k.events {
		if !slices.Equal(e.Tasks, []taskapi.Task{poison}) {
			t.Errorf("the keeper told %v of tasks %v, want the poison task %d alone", e.Kind, e.Tasks, poison.Sequence)
		}
		if e.Kind == taskproc.EventRescued {
			rescued++
		} else {
			poisoned++
		}
	}
	stats := k.client.Manager(poisonTopic).Stats()
	if rescued != poisonRescues || poisoned != 1 || stats.Rescued != poisonRescues || stats.Poisoned != 1 {
		t.Errorf("the keeper told %d rescues and %d poisoned tasks, and counted %d and %d; want %d and 1",
			rescued, poisoned, stats.Rescued, stats.Poisoned, poisonRescues)
	}
	if n := k.handled.Load(); n != 0 || stats.Polled != 0 {
		t.Errorf("the keeper's Manager, which never claims, polled %d batches and handled %d", stats.Polled, n)
	}
}

// awaitPoisonDeath waits until the worker polled the poison task and died
// of it: it said so and exited with status 3.
func awaitPoisonDeath(t *testing.T, w *worker, poison taskapi.Task) {
	t.Helper()
	select {
	case err := <-w.exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("worker %s ended with %v, want exit status 3 (poisoned); it printed %q: %s", w.owner, err, w.printed(), w.stderr.String())
		}
	case <-time.After(workerPatience):
		t.Fatalf("worker %s did not die of the poison task within %v; it printed %q", w.owner, workerPatience, w.printed())
	}
	if want := fmt.Sprintf("poison %d", poison.Sequence); !slices.Contains(w.printed(), want) {
		t.Fatalf("worker %s died, printing %q, want %q", w.owner, w.printed(), want)
	}
}

// awaitRescuedOrEnded waits until the poison task, held by a dead worker,
// is Ready again (rescued) or Failed (ended), and returns it.
func awaitRescuedOrEnded(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, poison taskapi.Task) taskapi.Info {
	t.Helper()
	deadline := time.Now().Add(workerPatience)
	for {
		info, ok, err := repo.Lookup(context.Background(), pool, poisonTopic, poison.Sequence)
		if err != nil || !ok {
			t.Fatalf("look up the poison task: %v (found %v)", err, ok)
		}
		if info.State == taskapi.Ready || info.State == taskapi.Failed {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poison task is %v under %s after %v, neither rescued nor ended", info.State, info.Owner, workerPatience)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitOthersSucceeded waits until every task of the topic but the poison
// task succeeded.
func awaitOthersSucceeded(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, poison taskapi.Task) {
	t.Helper()
	deadline := time.Now().Add(workerPatience)
	for {
		counts, err := repo.Count(context.Background(), pool, taskapi.Total, taskapi.Counting{Topic: poisonTopic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		if counts[poisonTopic][taskapi.Succeeded].Count == poisonOthers {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks of %s after %v: %v, want %d SUCCEEDED", poisonTopic, workerPatience, counts[poisonTopic], poisonOthers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOthers checks that every task but the poison task succeeded once,
// with one effect row, never rescued, and that the poison task's work
// never committed.
func checkOthers(t *testing.T, ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, poison taskapi.Task) {
	t.Helper()
	infos, err := repo.Page(ctx, pool, poisonTopic, taskapi.Listing{}, taskapi.Inception, poisonOthers+2, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		var effects int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM fault_effect WHERE sequence = $1", info.Sequence).Scan(&effects); err != nil {
			t.Fatal(err)
		}
		switch {
		case info.Task == poison && effects != 0:
			t.Errorf("the poison task's work committed %d times", effects)
		case info.Task != poison && (info.State != taskapi.Succeeded || info.Revivals != 0 || effects != 1):
			t.Errorf("task %s: %v, revived %d times, %d effect rows; want Succeeded, never revived, one effect row",
				info.Identifier, info.State, info.Revivals, effects)
		}
	}
}
