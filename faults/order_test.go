package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const (
	orderTopic       = "ordered"
	orderIdentifiers = 30
	orderEach        = 20 // tasks per identifier
	orderWorkers     = 3
	orderExpiry      = 2 * time.Second
	orderWork        = 200 * time.Millisecond // each task's function: a kill mostly lands while some run
	orderKillEvery   = time.Second
)

// orderRuns is how often TestIdentifierOrderSurvivesCrashes runs: once in
// the test command, ten times in CI's heavy step (TASK_TEST_ORDER_RUNS).
func orderRuns() int {
	if n, err := strconv.Atoi(os.Getenv("TASK_TEST_ORDER_RUNS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// TestIdentifierOrderSurvivesCrashes runs three consumer processes with
// ParallelTx, SingularByIdentifier and WithRevival, as
// docs/processing.md shows, over many tasks of a few dozen identifiers,
// and kills one of them with SIGKILL every second, starting a new one
// each time. The survivors' keepers expire the dead owners' tasks and
// revive them in their place; meanwhile a later task of an expired task's
// identifier waits (taskapi.AwaitRevival). In the end every task
// succeeded once, with its effect once, and the effects of each
// identifier committed in sequence order. Before the poll waited behind
// EXPIRED tasks, 4 to 17 effects a run committed out of order.
func TestIdentifierOrderSurvivesCrashes(t *testing.T) {
	for run := range orderRuns() {
		t.Run(fmt.Sprint(run), orderRun)
	}
}

func orderRun(t *testing.T) {
	dbURL := testdb.PostgresURL(t)
	pool, repo := openFaultDB(t, dbURL, orderTopic)
	var creations []taskapi.Creation
	for i := range orderEach {
		for id := range orderIdentifiers {
			creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("id-%02d", id), Input: strconv.Itoa(i)})
		}
	}
	if _, err := repo.Push(context.Background(), pool, orderTopic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
	args := []string{"-mix", "ordered", "-expiry", orderExpiry.String(), "-work", orderWork.String()}
	// ParallelTx(4) holds four connections, and the runtime keeps two for
	// itself: pgx's default pool of four on this machine would be refused.
	workerURL := withParam(dbURL, "pool_max_conns", "8")
	live := map[string]*worker{}
	next := 0
	start := func() {
		w := startWorker(t, workerURL, orderTopic, fmt.Sprintf("ordered-%d", next), args...)
		live[w.owner] = w
		next++
	}
	for range orderWorkers {
		start()
	}
	kills, holding := 0, 0
	for deadline := time.Now().Add(settleWithin); succeededOf(t, pool, repo) < len(creations); {
		if time.Now().After(deadline) {
			t.Fatalf("not every task succeeded within %v: %d of %d", settleWithin, succeededOf(t, pool, repo), len(creations))
		}
		time.Sleep(orderKillEvery)
		k := crashOrdered(t, pool, repo, live)
		kills++
		if len(k.held) > 0 {
			holding++
		}
		start()
	}
	for _, w := range live {
		w.stop(t)
	}
	t.Logf("%d kills, %d of them of a process that held tasks", kills, holding)
	checkOrder(t, pool, len(creations))
}

// withParam returns rawURL with the query parameter name set to value.
func withParam(rawURL, name, value string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err) // testdb's URLs parse
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// crashOrdered kills a live worker of the order test at random, as crash
// does for the crash test.
func crashOrdered(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, live map[string]*worker) *kill {
	owners := make([]string, 0, len(live))
	for o := range live {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	victim := live[owners[rand.IntN(len(owners))]]
	victim.kill(t)
	delete(live, victim.owner)
	k := &kill{owner: victim.owner, at: time.Now().UTC()}
	infos, err := repo.Page(context.Background(), pool, orderTopic,
		taskapi.Listing{States: []taskapi.State{taskapi.Active}}, taskapi.Inception, orderIdentifiers*orderEach, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Owner == victim.owner {
			k.held = append(k.held, info.Sequence)
		}
	}
	return k
}

// succeededOf counts the SUCCEEDED tasks of the order test's topic.
func succeededOf(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository) int {
	counts, err := repo.Count(context.Background(), pool, taskapi.Total, taskapi.Counting{Topic: orderTopic}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	return int(counts[orderTopic][taskapi.Succeeded].Count)
}

// checkOrder checks that each of the n tasks has one effect, and that the
// effects of every identifier committed in the order of their tasks'
// sequences: an identifier's next task runs only once the one before it
// committed, so the order of the effects' ids is the order of commits.
func checkOrder(t *testing.T, pool *pgxpool.Pool, n int) {
	rows, err := pool.Query(context.Background(), "SELECT identifier, sequence FROM fault_effect ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	seen := map[int64]int{}
	outOfOrder := 0
	for rows.Next() {
		var identifier string
		var sequence int64
		if err := rows.Scan(&identifier, &sequence); err != nil {
			t.Fatal(err)
		}
		seen[sequence]++
		if sequence < last[identifier] {
			outOfOrder++
			t.Errorf("identifier %s: the effect of task %d committed after that of task %d", identifier, sequence, last[identifier])
		}
		last[identifier] = max(last[identifier], sequence)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	twice := 0
	for _, k := range seen {
		if k > 1 {
			twice++
		}
	}
	if len(seen) != n || twice > 0 {
		t.Errorf("%d tasks have an effect, %d of them more than one; want %d, each once", len(seen), twice, n)
	}
	if outOfOrder > 0 {
		t.Errorf("%d effects committed out of their identifier's order", outOfOrder)
	}
}
