package faults

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

const runtimeTasks = 2000

// TestRuntimeCarriesOnThroughCuts runs a taskproc Client whose every
// connection, the Notifier's included, goes through the proxy, and cuts
// them at random points every few dozen milliseconds while it works. The
// Client carries on by itself: every task succeeds — a completing
// transaction that was cut is written again once the database answers,
// never turned into a Failure — none is left Active, and the work of every
// task committed exactly once.
func TestRuntimeCarriesOnThroughCuts(t *testing.T) {
	r := newCutRig(t)
	ctx := context.Background()
	if _, err := r.repo.Initialize(ctx, r.direct, "runtime"); err != nil {
		t.Fatal(err)
	}
	pushReady(t, r, "runtime", runtimeTasks)
	repo, err := taskpg.New("runtime-owner")
	if err != nil {
		t.Fatal(err)
	}
	client, err := taskproc.New(repo, taskpg.Transact(r.proxied),
		taskproc.WithNotifier(taskpg.NewNotifier(r.proxied)), taskproc.WithPause(20*time.Millisecond), taskproc.WithSize(20),
		taskproc.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Handle("runtime", effectHandler(repo.Owner())); err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cuts := cutUntilDone(t, r)
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	succeeded := r.count(t, "runtime", "", taskapi.Succeeded)
	failed := r.count(t, "runtime", "", taskapi.Failed)
	var rows, distinct int64
	if err := r.direct.QueryRow(ctx, "SELECT count(*), count(DISTINCT identifier) FROM fault_effect").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if succeeded != runtimeTasks || failed != 0 || rows != succeeded || distinct != succeeded {
		t.Errorf("%d tasks succeeded and %d failed of %d, with %d effects of %d identifiers: every task succeeds, with its one effect",
			succeeded, failed, runtimeTasks, rows, distinct)
	}
	t.Logf("%d tasks succeeded, each with one effect, through %d cuts", succeeded, cuts)
}

// cutUntilDone cuts the proxy at a random byte every few dozen
// milliseconds, and restores it shortly after, until every task of
// "runtime" is completed; it returns how many cuts it made.
func cutUntilDone(t *testing.T, r *cutRig) int {
	deadline := time.Now().Add(settleWithin)
	cuts := 0
	for r.count(t, "runtime", "", taskapi.Succeeded)+r.count(t, "runtime", "", taskapi.Failed) < runtimeTasks {
		if time.Now().After(deadline) {
			t.Fatalf("not every task was completed within %v: %d READY, %d ACTIVE", settleWithin,
				r.count(t, "runtime", "", taskapi.Ready), r.count(t, "runtime", "", taskapi.Active))
		}
		r.proxy.CutAfter(1 + rand.Int64N(20*cutBudget))
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		r.proxy.Restore()
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		cuts++
	}
	return cuts
}

// effectHandler completes each batch with an effect row per task, in the
// completing transaction.
func effectHandler(owner string) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		time.Sleep(5 * time.Millisecond) // some work, so that cuts land in every phase of a batch
		return settleWithEffects(b, owner, execPg)
	})
}

// settleWithEffects completes b with CompleteTx, every task Succeeded,
// writing an effect row per task (fault_effect, by owner) in the
// completing transaction; exec runs a statement in a transaction of the
// backend's.
func settleWithEffects[Tx any](b *taskproc.Batch, owner string, exec func(ctx context.Context, tx Tx, sql string, args ...any) error) error {
	return taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
		decisions := taskproc.Decisions{}
		for _, task := range b.Tasks() {
			if err := exec(ctx, tx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
				task.Identifier, task.Sequence, owner); err != nil {
				return nil, err
			}
			decisions[task] = taskapi.Decision{Result: taskapi.Success}
		}
		return decisions, nil
	})
}

// execPg runs a statement in a taskpg transaction.
func execPg(ctx context.Context, tx taskpg.DB, sql string, args ...any) error {
	_, err := tx.Exec(ctx, sql, args...)
	return err
}
