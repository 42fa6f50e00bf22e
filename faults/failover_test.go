package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const (
	failoverTopic   = "failover"
	failoverPushers = 4
	failoverWorkers = 2
	// failoverRounds is how many failovers the test command runs;
	// TASK_TEST_FAILOVERS sets more, as the run that recorded README's
	// figures did (bench/results/failover.json).
	failoverRounds = 2
	// failoverFlow is how many tasks must succeed between two failovers.
	failoverFlow = 40
)

// TestFailoverLosesNothingCommitted runs producers in the test and consumer
// processes against a primary and its synchronous standby, through a
// multi-host URL (target_session_attrs=read-write), and fails the primary
// over again and again: SIGKILL to every process of its server, then the
// standby promoted, then the dead node rebuilt as the new standby. Every
// push whose commit returned is found, every task ends with one result and
// its work committed once, and the consumer processes carry on without a
// restart. It logs how long after each kill the first task succeeded on
// the new primary.
func TestFailoverLosesNothingCommitted(t *testing.T) {
	rounds := failoverRounds
	if n, err := strconv.Atoi(os.Getenv("TASK_TEST_FAILOVERS")); err == nil && n > 0 {
		rounds = n
	}
	ctx := context.Background()
	r := testdb.OwnReplicated(t, true)
	pool, repo := openFaultDB(t, r.URL(), failoverTopic)
	prod := startProducers(pool, repo, failoverTopic, failoverPushers)
	var workers []*worker
	for i := range failoverWorkers {
		workers = append(workers, startWorker(t, r.URL(), failoverTopic, fmt.Sprintf("failover-worker-%d", i), "-expiry", "5s"))
	}
	resumes := failOver(t, r, pool, rounds)
	prod.halt()
	total := awaitAllSucceeded(t, pool, repo, failoverTopic)
	for _, w := range workers {
		w.stop(t) // the same processes: nobody restarted them
	}
	checkProducedOnce(t, ctx, pool, prod, total)
	recordFailovers(t, pool, prod, resumes)
	slices.Sort(resumes)
	t.Logf("%d failovers, %d orders committed, %d pushes failed: work resumed %v after the kill (p50 %v, max %v)",
		rounds, len(prod.committed), prod.failed, resumes, resumes[len(resumes)/2], resumes[len(resumes)-1])
}

// failOver fails r's primary over rounds times, each once failoverFlow
// more effects committed, and rebuilds the dead node as the standby; it
// returns how long after each kill the first effect committed.
func failOver(t *testing.T, r *testdb.Replicated, pool *pgxpool.Pool, rounds int) []time.Duration {
	t.Helper()
	ctx := context.Background()
	var resumes []time.Duration
	for range rounds {
		awaitEffects(t, pool, effectsNow(t, pool)+failoverFlow)
		before := effectsNow(t, pool)
		at := time.Now()
		if err := r.Failover(ctx); err != nil {
			t.Fatal(err)
		}
		awaitEffects(t, pool, before+1)
		resumes = append(resumes, time.Since(at))
		if err := r.Rejoin(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return resumes
}

// effectsNow returns how many effect rows committed, asking again while
// the failover refuses.
func effectsNow(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	for {
		var n int
		err := pool.QueryRow(context.Background(), "SELECT count(*) FROM fault_effect").Scan(&n)
		if err == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("count the effects: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitEffects waits until at least n effect rows committed.
func awaitEffects(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	for effectsNow(t, pool) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d effects after %v", n, settleWithin)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recordFailovers writes what the test measured to the file that
// TASK_TEST_FAILOVER_RESULTS names, if any, as a report of the bench
// (bench/failover.go reads it into README's figures: bench/results/failover.json).
func recordFailovers(t *testing.T, pool *pgxpool.Pool, prod *producers, resumes []time.Duration) {
	t.Helper()
	path := os.Getenv("TASK_TEST_FAILOVER_RESULTS")
	if path == "" {
		return
	}
	var version string
	if err := pool.QueryRow(context.Background(), "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	ms := make([]float64, len(resumes))
	for i, d := range resumes {
		ms[i] = float64(d.Microseconds()) / 1000
	}
	report := map[string]any{
		"date":    time.Now().UTC().Format(time.RFC3339),
		"command": fmt.Sprintf("TASK_TEST_FAILOVERS=%d go test -run '^TestFailoverLosesNothingCommitted$' ./faults", len(resumes)),
		"machine": map[string]any{"cpus": runtime.NumCPU(), "go": runtime.Version(), "postgresql": version},
		"figures": []any{},
		"failover": map[string]any{
			"synchronous": true, "producers": failoverPushers, "consumers": failoverWorkers,
			"pushes_committed": len(prod.committed), "pushes_failed": prod.failed, "resumes_ms": ms,
		},
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAsynchronousFailoverLosesWhatTheStandbyLacked is what operating.md
// says an asynchronous standby loses: with its WAL receiver held, the
// primary confirms a push and a completion (with its effect row) that the
// standby never receives; after the failover the pushed tasks are gone,
// the completed tasks are ACTIVE again under the owner that completed them,
// and the effect rows are gone. What the standby had received is all
// there.
func TestAsynchronousFailoverLosesWhatTheStandbyLacked(t *testing.T) {
	ctx := context.Background()
	r := testdb.OwnReplicated(t, false)
	pool, repo := openFaultDB(t, r.URL(), failoverTopic)
	kept, err := repo.Push(ctx, pool, failoverTopic, taskapi.Append, creationsNamed("kept", 10)...)
	if err != nil {
		t.Fatal(err)
	}
	polled, err := repo.Poll(ctx, pool, failoverTopic, 5)
	if err != nil || len(polled) != 5 {
		t.Fatalf("poll: %d tasks, %v", len(polled), err)
	}
	awaitReplayed(t, pool, r.StandbyURL())
	if err := r.HoldStandby(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(ctx, pool, failoverTopic, taskapi.Append, creationsNamed("lost", 10)...); err != nil {
		t.Fatal(err)
	}
	err = taskpg.Transact(pool)(ctx, func(tx taskpg.DB) error {
		completions := make([]taskapi.Completion, len(polled))
		for i, task := range polled {
			if _, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
				task.Identifier, task.Sequence, repo.Owner()); err != nil {
				return err
			}
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		return repo.Complete(ctx, tx, failoverTopic, completions...)
	})
	if err != nil {
		t.Fatalf("the completion, confirmed by the primary alone: %v", err)
	}
	if err := r.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	infos := pageAfterFailover(t, pool, repo)
	if len(infos) != len(kept) {
		t.Errorf("%d tasks after the failover, want the %d pushed before the standby was held", len(infos), len(kept))
	}
	for _, info := range infos {
		wasPolled := slices.ContainsFunc(polled, func(p taskapi.Task) bool { return p.Sequence == info.Sequence })
		switch {
		case !strings.HasPrefix(info.Identifier, "kept"):
			t.Errorf("task %s survived, though the standby never received its push", info.Identifier)
		case wasPolled && (info.State != taskapi.Active || info.Owner != repo.Owner()):
			t.Errorf("task %s, completed on the primary alone: %v under %q, want Active under %q again", info.Identifier, info.State, info.Owner, repo.Owner())
		case !wasPolled && info.State != taskapi.Ready:
			t.Errorf("task %s: %v, want Ready", info.Identifier, info.State)
		}
	}
	if n := effectsNow(t, pool); n != 0 {
		t.Errorf("%d effect rows after the failover, want none: they committed with the lost completion", n)
	}
}

// creationsNamed returns n creations named prefix-0, prefix-1, ...
func creationsNamed(prefix string, n int) []taskapi.Creation {
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", prefix, i)}
	}
	return creations
}

// awaitReplayed waits until the standby at standbyURL has replayed every
// commit of the primary so far.
func awaitReplayed(t *testing.T, pool *pgxpool.Pool, standbyURL string) {
	t.Helper()
	ctx := context.Background()
	var lsn string
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	standby, err := pgx.Connect(ctx, standbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close(ctx)
	deadline := time.Now().Add(settleWithin)
	for {
		var done bool
		if err := standby.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby has not replayed %s after %v", lsn, settleWithin)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pageAfterFailover returns every task of the topic, asking again while
// the pool's connections to the dead primary fail.
func pageAfterFailover(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository) []taskapi.Info {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	for {
		infos, err := repo.Page(context.Background(), pool, failoverTopic, taskapi.Listing{}, taskapi.Inception, 1000, taskapi.Forward)
		if err == nil {
			return infos
		}
		if time.Now().After(deadline) {
			t.Fatalf("page the topic after the failover: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
