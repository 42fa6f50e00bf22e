package taskpg_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The benchmarks of the hot paths, each on a fresh database. They report
// tasks/s besides ns/op; an operation is one task unless the name says a
// batch. Run them with, for instance:
//
//	go test ./taskpg/ -run '^$' -bench . -benchtime 100000x
const (
	benchTopic     = "bench"
	benchBatch     = 1000 // tasks per bulk push
	benchPollSize  = 100  // tasks per poll in the burn-downs
	benchConsumers = 4
)

var growthRows = flag.Int("taskpg.growth", 200_000,
	"completed tasks already in the topic for BenchmarkBurnDownGrowth")

// benchSetup returns a fresh database with the topic and a registered
// repository.
func benchSetup(b testing.TB, capacity ...int64) (*pgxpool.Pool, *taskpg.Repository) {
	b.Helper()
	db := testdb.Postgres(b)
	repo, err := taskpg.New("bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := repo.Register(b.Context(), db); err != nil {
		b.Fatal(err)
	}
	if _, err := repo.Initialize(b.Context(), db, benchTopic); err != nil {
		b.Fatal(err)
	}
	for _, c := range capacity {
		if err := repo.SetCapacity(b.Context(), db, benchTopic, taskapi.Capacity{Ready: c}); err != nil {
			b.Fatal(err)
		}
	}
	return db, repo
}

// benchCreations returns n creations with identifiers from first on, each
// with a small input.
func benchCreations(first, n int) []taskapi.Creation {
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		id := first + i
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("id-%d", id), Input: fmt.Sprintf(`{"n":%d}`, id)}
	}
	return creations
}

// reportRate stops the timer and reports the tasks per second of the timed
// part.
func reportRate(b *testing.B, tasks int) {
	b.StopTimer()
	b.ReportMetric(float64(tasks)/b.Elapsed().Seconds(), "tasks/s")
}

// serverCPU returns the processor time that the server processes of db's
// database have used, and whether the server runs on this machine. On a
// shared machine it is a steadier measure of what the statements cost than
// the wall clock.
func serverCPU(b *testing.B, db *pgxpool.Pool) (time.Duration, bool) {
	b.Helper()
	rows, _ := db.Query(b.Context(), `SELECT pid FROM pg_catalog.pg_stat_activity WHERE datname = current_database()`)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	found := false
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // not on this machine, or gone
		}
		found = true
		// Fields 14 and 15, utime and stime, follow the parenthesized name.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		for _, f := range fields[11:13] {
			n, _ := strconv.ParseInt(f, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond, found // USER_HZ is 100 on Linux
}

// startServerCPU returns a function that reports the server's processor time
// per operation since the call, when it is known.
func startServerCPU(b *testing.B, db *pgxpool.Pool) func() {
	start, ok := serverCPU(b, db)
	return func() {
		if end, found := serverCPU(b, db); ok && found {
			b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "server-µs/op")
		}
	}
}

// BenchmarkPushBulk pushes b.N tasks with Append in batches of benchBatch.
func BenchmarkPushBulk(b *testing.B) {
	benchPushBatches(b, taskapi.Append, 1<<62)
}

// BenchmarkPushBulkCapacity is BenchmarkPushBulk into a topic with a
// capacity that the pushes never reach: the cost of admission.
func BenchmarkPushBulkCapacity(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchPushBatches(b, taskapi.Append, 1<<62) })
	b.Run("capacity", func(b *testing.B) { benchPushBatches(b, taskapi.Append, 1<<62, 1<<40) })
}

// BenchmarkPushReplace pushes b.N tasks with Replace in batches of
// benchBatch, over ten batches' worth of identifiers: from the eleventh batch
// on, every task replaces an older one.
func BenchmarkPushReplace(b *testing.B) {
	benchPushBatches(b, taskapi.Replace, 10*benchBatch)
}

func benchPushBatches(b *testing.B, insertion taskapi.Insertion, identifiers int, capacity ...int64) {
	db, repo := benchSetup(b, capacity...)
	ctx := b.Context()
	creations := benchCreations(0, b.N)
	for i := range creations {
		creations[i].Identifier = fmt.Sprintf("id-%d", i%identifiers)
	}
	b.ReportAllocs()
	reportServer := startServerCPU(b, db)
	b.ResetTimer()
	for first := 0; first < b.N; first += benchBatch {
		batch := creations[first:min(first+benchBatch, b.N)]
		if _, err := repo.Push(ctx, db, benchTopic, insertion, batch...); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
	reportServer()
}

// BenchmarkPushSingle pushes one task per transaction from 8 goroutines per
// core, as producers do from their own transactions.
func BenchmarkPushSingle(b *testing.B) {
	benchPushSingle(b, pushInTx)
}

// BenchmarkPushSingleCapacity pushes one task per push, as
// BenchmarkPushSingle does and on the pool, into a topic without and with
// a capacity that the pushes never reach: the cost of admission.
func BenchmarkPushSingleCapacity(b *testing.B) {
	for _, c := range []struct {
		name     string
		capacity []int64
	}{{"none", nil}, {"capacity", []int64{1 << 40}}} {
		b.Run("tx/"+c.name, func(b *testing.B) { benchPushSingle(b, pushInTx, c.capacity...) })
		b.Run("pool/"+c.name, func(b *testing.B) { benchPushSingle(b, pushAlone, c.capacity...) })
	}
}

func benchPushSingle(b *testing.B, push func(context.Context, *pgxpool.Pool, *taskpg.Repository, []taskapi.Creation) error, capacity ...int64) {
	db, repo := benchSetup(b, capacity...)
	b.ReportAllocs()
	reportServer := startServerCPU(b, db)
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if err := push(b.Context(), db, repo, benchCreations(i, 1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, b.N)
	reportServer()
}

// pushAlone pushes on the pool: a transaction of the push's own.
func pushAlone(ctx context.Context, db *pgxpool.Pool, repo *taskpg.Repository, creations []taskapi.Creation) error {
	_, err := repo.Push(ctx, db, benchTopic, taskapi.Append, creations...)
	return err
}

func pushInTx(ctx context.Context, db *pgxpool.Pool, repo *taskpg.Repository, creations []taskapi.Creation) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := repo.Push(ctx, tx, benchTopic, taskapi.Append, creations...); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// BenchmarkBurnDown works b.N Ready tasks off with benchConsumers consumers,
// each polling benchPollSize tasks in one transaction and completing them in
// another. The planner has no statistics of the partition.
func BenchmarkBurnDown(b *testing.B) {
	db, repo := benchSetup(b)
	benchLoad(b, db, repo, b.N)
	benchBurnDown(b, db, repo)
}

// BenchmarkBurnDownStaleStats burns down after statistics taken right after
// the bulk load, while every task was Ready: the planner believes that the
// whole partition is Ready for the whole run.
func BenchmarkBurnDownStaleStats(b *testing.B) {
	db, repo := benchSetup(b)
	benchLoad(b, db, repo, b.N)
	if err := repo.Refresh(b.Context(), db); err != nil {
		b.Fatal(err)
	}
	benchBurnDown(b, db, repo)
}

// BenchmarkBurnDownGrowth burns down with -taskpg.growth completed tasks
// already in the topic, stored before the Ready ones and vacuumed.
func BenchmarkBurnDownGrowth(b *testing.B) {
	db, repo := benchSetup(b)
	ctx := b.Context()
	_, err := db.Exec(ctx, `
INSERT INTO public.task (topic, identifier, state, owner, created, completed, input)
SELECT $1, 'old-' || i, 6, 'bench', now() AT TIME ZONE 'utc', now() AT TIME ZONE 'utc', '{"n":' || i || '}'
FROM generate_series(1, $2::int) AS i`, benchTopic, *growthRows)
	if err == nil {
		_, err = db.Exec(ctx, `VACUUM ANALYZE public.task`)
	}
	if err != nil {
		b.Fatal(err)
	}
	benchLoad(b, db, repo, b.N)
	benchBurnDown(b, db, repo)
}

// benchLoad pushes n Ready tasks in bulk.
func benchLoad(b *testing.B, db *pgxpool.Pool, repo *taskpg.Repository, n int) {
	b.Helper()
	for first := 0; first < n; first += benchBatch {
		creations := benchCreations(first, min(benchBatch, n-first))
		if _, err := repo.Push(b.Context(), db, benchTopic, taskapi.Append, creations...); err != nil {
			b.Fatal(err)
		}
	}
}

// benchBurnDown times benchConsumers consumers that work the topic off until
// it is empty, and checks that each task was worked once.
func benchBurnDown(b *testing.B, db *pgxpool.Pool, repo *taskpg.Repository) {
	b.Helper()
	b.ReportAllocs()
	reportServer := startServerCPU(b, db)
	b.ResetTimer()
	var wg sync.WaitGroup
	worked := make([]int, benchConsumers)
	for c := range benchConsumers {
		wg.Go(func() {
			n, err := consume(b.Context(), db, repo)
			if err != nil {
				b.Error(err)
			}
			worked[c] = n
		})
	}
	wg.Wait()
	b.StopTimer()
	total := 0
	for _, n := range worked {
		total += n
	}
	if total != b.N {
		b.Fatalf("worked %d tasks of %d", total, b.N)
	}
	reportRate(b, b.N)
	reportServer()
}

// consume polls and completes tasks until a poll finds none, and returns how
// many it completed.
func consume(ctx context.Context, db *pgxpool.Pool, repo *taskpg.Repository) (int, error) {
	worked := 0
	completions := make([]taskapi.Completion, 0, benchPollSize)
	for {
		tasks, err := repo.Poll(ctx, db, benchTopic, benchPollSize)
		if err != nil || len(tasks) == 0 {
			return worked, err
		}
		completions = completions[:0]
		for _, t := range tasks {
			completions = append(completions, taskapi.Completion{Task: t, Decision: taskapi.Decision{Result: taskapi.Success}})
		}
		if err := repo.Complete(ctx, db, benchTopic, completions...); err != nil {
			return worked, err
		}
		worked += len(tasks)
	}
}

// BenchmarkPushThenClaim measures the two steps that no consumer can skip
// between a push and the start of its tasks' handlers, one after the other
// on an otherwise idle server: the push of a batch, committed (no consumer
// sees its tasks before), and the poll that claims it, committed (no
// handler may start before), each in the cheapest way taskpg offers. An
// operation is one batch; it reports the medians and 99th percentiles in
// ms of each step and of both together, the floor of push → start latency
// on this machine:
//
//	go test ./taskpg/ -run '^$' -bench PushThenClaim -benchtime 1000x
func BenchmarkPushThenClaim(b *testing.B) {
	for _, n := range []int{100, 10} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			db, repo := benchSetup(b)
			ctx := b.Context()
			var push, claim, both []time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				// On the pool: a push alone commits in one round trip.
				if _, err := repo.Push(ctx, db, benchTopic, taskapi.Append, benchCreations(i*n, n)...); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				var tasks []taskapi.Task
				err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) (err error) {
					tasks, err = repo.Poll(ctx, tx, benchTopic, n)
					return err
				})
				t2 := time.Now()
				push, claim, both = append(push, t1.Sub(t0)), append(claim, t2.Sub(t1)), append(both, t2.Sub(t0))
				if err == nil {
					err = completeAll(ctx, db, repo, tasks)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			reportQuantiles(b, "push", push)
			reportQuantiles(b, "claim", claim)
			reportQuantiles(b, "both", both)
		})
	}
}

// completeAll completes tasks with Success in a transaction.
func completeAll(ctx context.Context, db *pgxpool.Pool, repo *taskpg.Repository, tasks []taskapi.Task) error {
	completions := make([]taskapi.Completion, len(tasks))
	for i, t := range tasks {
		completions[i] = taskapi.Completion{Task: t, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return repo.Complete(ctx, tx, benchTopic, completions...) })
}

// reportQuantiles reports the median and 99th percentile of ds in ms.
func reportQuantiles(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(at(0.5), name+"-p50-ms")
	b.ReportMetric(at(0.99), name+"-p99-ms")
}
