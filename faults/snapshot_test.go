package faults

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const snapshotTopic = "snapshot"

// snapshotPhase is how long each phase of the held-snapshot test lasts:
// before, while and after a session pins the xmin horizon. Set
// FAULT_SNAPSHOT_PHASE (a duration, such as 3m) for a longer run.
func snapshotPhase(t *testing.T) time.Duration {
	if s := os.Getenv("FAULT_SNAPSHOT_PHASE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("FAULT_SNAPSHOT_PHASE: %v", err)
		}
		return d
	}
	return 3 * time.Second
}

// phase is what one phase of the load measured.
type phase struct {
	name       string
	throughput float64 // tasks completed per second
	deadTuples int64   // dead row versions left in the task tables by a VACUUM at its end
}

// TestHeldSnapshotLosesNothing runs producers and consumer
// processes while an idle-in-transaction session holds a snapshot, which
// keeps VACUUM from removing any row version dead since. It reports
// throughput and dead tuples before, during and after; nothing is lost,
// and the queue drains once the session ends.
func TestHeldSnapshotLosesNothing(t *testing.T) {
	ctx := context.Background()
	cluster, l := startLoad(t, snapshotTopic)
	pool, repo, workers, prod := l.pool, l.repo, l.workers, l.producers
	length := snapshotPhase(t)
	before := measurePhase(t, pool, "before", length)
	holder := holdSnapshot(t, cluster.URL())
	during := measurePhase(t, pool, "held", length)
	if err := holder.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after := measurePhase(t, pool, "after", length)
	prod.halt()
	total := awaitAllSucceeded(t, pool, repo, snapshotTopic)
	for _, w := range workers {
		w.stop(t)
	}
	checkProducedOnce(t, ctx, pool, prod, total)
	for _, p := range []phase{before, during, after} {
		t.Logf("%-6s %8.0f tasks/s  %8d dead tuples", p.name, p.throughput, p.deadTuples)
	}
}

// holdSnapshot opens a session that takes a snapshot and then sits idle in
// its transaction, as a forgotten psql or a stuck report would.
func holdSnapshot(t *testing.T, url string) *pgx.Conn {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	for _, stmt := range []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM fault_order"} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// measurePhase lets the load run for length and measures it.
func measurePhase(t *testing.T, pool *pgxpool.Pool, name string, length time.Duration) phase {
	ctx := context.Background()
	start := time.Now().UTC()
	time.Sleep(length)
	p := phase{name: name}
	var done int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM fault_effect WHERE at >= $1", start).Scan(&done); err != nil {
		t.Fatal(err)
	}
	p.throughput = float64(done) / time.Since(start).Seconds()
	// VACUUM as autovacuum would, had it woken: it can remove only the row
	// versions that died before the oldest snapshot.
	for _, stmt := range []string{"VACUUM task", "SELECT pg_stat_force_next_flush()"} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	err := pool.QueryRow(ctx, "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname LIKE 'task%'").Scan(&p.deadTuples)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
