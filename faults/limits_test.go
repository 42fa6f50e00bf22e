package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The fleet of the limit tests: processes, each with poll loops of its
// own, over tasks of keys identifiers.
const (
	limitProcesses = 4
	limitPollers   = 4
	limitTasks     = 800
	limitKeys      = 50
)

// TestFleetLimitsHoldAcrossProcesses runs limitProcesses consumer
// processes of limitPollers poll loops each on one topic with limits,
// while a connection of its own samples the Active tasks every
// millisecond: never more than the topic's Active limit, never more of one
// identifier than its limit per identifier. In the end every task
// succeeded once.
func TestFleetLimitsHoldAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		limits taskapi.Limits
	}{
		{"an Active limit of 5", taskapi.Limits{Active: 5}},
		{"2 per identifier over 50 identifiers", taskapi.Limits{PerIdentifier: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testdb.PostgresURL(t)
			const topic = "limited"
			pool, repo := openFaultDB(t, url, topic)
			if err := repo.SetLimits(ctx, pool, topic, c.limits); err != nil {
				t.Fatal(err)
			}
			creations := make([]taskapi.Creation, limitTasks)
			for i := range creations {
				creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("key-%02d", i%limitKeys)}
			}
			if _, err := repo.Push(ctx, pool, topic, taskapi.Append, creations...); err != nil {
				t.Fatal(err)
			}
			sampled := sampleActive(t, url, topic)
			var workers []*worker
			for i := range limitProcesses {
				workers = append(workers, startWorker(t, url, topic, fmt.Sprintf("worker-%d", i),
					"-pollers", fmt.Sprint(limitPollers), "-work", "5ms"))
			}
			t.Cleanup(func() { explainStall(t, url, workers) })
			awaitSucceeded(t, pool, repo, topic, limitTasks)
			for _, w := range workers {
				w.stop(t)
			}
			s := sampled()
			t.Logf("%d samples: at most %d Active, %d of one identifier", s.samples, s.total, s.perKey)
			if c.limits.Active > 0 && s.total != c.limits.Active {
				t.Errorf("at most %d Active tasks at once, want the limit %d, reached and never passed", s.total, c.limits.Active)
			}
			if c.limits.PerIdentifier > 0 && s.perKey != c.limits.PerIdentifier {
				t.Errorf("at most %d Active tasks of one identifier at once, want the limit %d, reached and never passed", s.perKey, c.limits.PerIdentifier)
			}
			var rows, distinct int
			if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT sequence) FROM fault_effect").Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if rows != limitTasks || distinct != limitTasks {
				t.Errorf("effects: %d rows of %d tasks, want %d of %d", rows, distinct, limitTasks, limitTasks)
			}
		})
	}
}

// activeSamples is what the sampler saw: how many samples, and the most
// Active tasks of the topic and of one identifier in any of them.
type activeSamples struct {
	samples, total, perKey int64
}

// sampleActive samples the Active tasks of topic every millisecond on a
// connection of its own, until the returned function stops it and returns
// what it saw.
func sampleActive(t *testing.T, url, topic string) func() activeSamples {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan activeSamples, 1)
	go func() {
		defer conn.Close(context.Background())
		var s activeSamples
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- s
				return
			case <-tick.C:
			}
			var total, perKey int64
			err := conn.QueryRow(context.Background(), `
SELECT coalesce(sum(n), 0), coalesce(max(n), 0)
FROM (SELECT count(*) AS n FROM public.task WHERE topic = $1 AND state = 0 GROUP BY identifier) AS k`, topic).Scan(&total, &perKey)
			if err != nil {
				t.Errorf("sample: %v", err)
				done <- s
				return
			}
			s.samples++
			s.total, s.perKey = max(s.total, total), max(s.perKey, perKey)
		}
	}()
	return func() activeSamples {
		close(stop)
		return <-done
	}
}

// awaitSucceeded waits until n tasks of topic succeeded.
func awaitSucceeded(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic string, n int64) {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	for {
		counts, err := repo.Count(context.Background(), pool, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		if err != nil {
			t.Fatal(err)
		}
		if counts[topic][taskapi.Succeeded].Count == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every task succeeded within %v: %v", settleWithin, counts[topic])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// explainStall logs, when t failed, what the database's sessions were
// doing and what the workers wrote to stderr: a stall is then explained by
// the run that saw it.
func explainStall(t *testing.T, url string, workers []*worker) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Logf("explain the stall: %v", err)
		return
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `
SELECT pid, coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''),
       coalesce(extract(epoch FROM now() - xact_start)::int, -1), left(query, 200)
FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	var pid, age int
	var state, wait, query string
	_, err = pgx.ForEachRow(rows, []any{&pid, &state, &wait, &age, &query}, func() error {
		t.Logf("session %d: %s, waiting for %q, transaction of %d s: %s", pid, state, wait, age, query)
		return nil
	})
	if err != nil {
		t.Logf("explain the stall: %v", err)
	}
	for _, w := range workers {
		t.Logf("worker %s wrote: %s", w.owner, w.stderr.String())
	}
}
