package faults

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// lostCompletions is how many tasks the runtime completes on the primary
// alone in TestAsynchronousFailoverRunsLostCompletionsAgain.
const lostCompletions = 5

// TestAsynchronousFailoverRunsLostCompletionsAgain is the runtime's side of
// TestAsynchronousFailoverLosesWhatTheStandbyLacked, as operating.md tells
// it: a taskproc Client polls tasks while the standby still receives, and
// completes them with their effect rows (CompleteTx) once the standby is
// held, so that the primary alone confirms the completions. The standby
// is promoted. The Client, which nobody restarts, learns of the failover
// from its Notifier, whose connection the failover cut (its polls need not
// fail: pgx's pool replaces a dead connection before it hands it out),
// gives back the tasks that came back Active under its owner, and runs
// them again: each task ends Succeeded with one effect row, its handler
// having run twice, and nothing is left Active.
func TestAsynchronousFailoverRunsLostCompletionsAgain(t *testing.T) {
	ctx := context.Background()
	r := testdb.OwnReplicated(t, false)
	pool, repo := openFaultDB(t, r.URL(), failoverTopic)
	if _, err := repo.Push(ctx, pool, failoverTopic, taskapi.Append, creationsNamed("rerun", lostCompletions)...); err != nil {
		t.Fatal(err)
	}
	consumer := registeredOwner(t, pool, "async-consumer")
	h := newGatedEffects(pool)
	client, err := taskproc.New(consumer, taskpg.Transact(pool), taskproc.WithNotifier(taskpg.NewNotifier(pool)),
		taskproc.WithSize(lostCompletions), taskproc.WithPause(200*time.Millisecond),
		taskproc.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Handle(failoverTopic, h); err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), workerPatience)
		defer cancel()
		if err := client.Stop(ctx); err != nil {
			t.Errorf("stop the Client: %v", err)
		}
	})

	select { // the batch is polled, Active under the consumer, held by its handler
	case <-h.held:
	case <-time.After(settleWithin):
		t.Fatalf("no batch reached the handler within %v", settleWithin)
	}
	awaitReplayed(t, pool, r.StandbyURL())
	if err := r.HoldStandby(ctx); err != nil {
		t.Fatal(err)
	}
	close(h.release) // the completion and its effects: on the primary alone
	awaitEffects(t, pool, lostCompletions)
	if err := r.Failover(ctx); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(settleWithin)
	for {
		infos := pageAfterFailover(t, pool, repo)
		done := len(infos) == lostCompletions
		for _, info := range infos {
			done = done && info.State == taskapi.Succeeded
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the failover and %v: %+v, want %d tasks Succeeded", settleWithin, infos, lostCompletions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	effects := effectsBySequence(t, pool)
	for sequence, runs := range h.ran() {
		if runs != 2 {
			t.Errorf("task %d: its handler ran %d times, want twice (once on the lost primary, once again after the failover)", sequence, runs)
		}
		if effects[sequence] != 1 {
			t.Errorf("task %d: %d effect rows, want one", sequence, effects[sequence])
		}
	}
	if len(effects) != lostCompletions {
		t.Errorf("effects for %d tasks, want %d: %v", len(effects), lostCompletions, effects)
	}
}

// gatedEffects is a handler that writes an effect row for each task of a
// batch with its completion (CompleteTx). Its first batch waits for
// release, after saying so on held; it counts how often each task ran.
type gatedEffects struct {
	pool          taskpg.DB
	held, release chan struct{}
	mu            sync.Mutex
	runs          map[int64]int
}

func newGatedEffects(pool taskpg.DB) *gatedEffects {
	return &gatedEffects{pool: pool, held: make(chan struct{}), release: make(chan struct{}), runs: map[int64]int{}}
}

// Handle implements taskproc.Handler.
func (g *gatedEffects) Handle(ctx context.Context, b *taskproc.Batch) error {
	g.mu.Lock()
	first := len(g.runs) == 0
	for _, task := range b.Tasks() {
		g.runs[task.Sequence]++
	}
	g.mu.Unlock()
	if first {
		close(g.held)
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return settleWithEffects(b, "async-consumer", execPg)
}

// ran returns how many times the handler ran each task, by sequence.
func (g *gatedEffects) ran() map[int64]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	runs := make(map[int64]int, len(g.runs))
	for sequence, n := range g.runs {
		runs[sequence] = n
	}
	return runs
}

// effectsBySequence returns how many effect rows each task has.
func effectsBySequence(t *testing.T, pool taskpg.DB) map[int64]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT sequence, count(*)::int FROM fault_effect GROUP BY sequence")
	if err != nil {
		t.Fatal(err)
	}
	effects := map[int64]int{}
	var sequence int64
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&sequence, &n}, func() error { effects[sequence] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return effects
}
