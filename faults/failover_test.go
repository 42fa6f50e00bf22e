package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

const (
	failoverTopic   = "failover"
	failoverPushers = 4
	failoverWorkers = 2
	// failoverRounds is how many failovers the test command runs; CI's
	// heavy step sets TASK_TEST_FAILOVERS for the figures in README.
	failoverRounds = 3
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
	prod.halt()
	total := awaitAllSucceeded(t, pool, repo, failoverTopic)
	for _, w := range workers {
		w.stop(t) // the same processes: nobody restarted them
	}
	checkProducedOnce(t, ctx, pool, prod, total)
	slices.Sort(resumes)
	t.Logf("%d failovers, %d orders committed, %d pushes failed: work resumed %v after the kill (p50 %v, max %v)",
		rounds, len(prod.committed), prod.failed, resumes, resumes[len(resumes)/2], resumes[len(resumes)-1])
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
