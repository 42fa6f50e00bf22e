package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// benchArgs are the arguments of River's bench job: the push time.
type benchArgs struct {
	Pushed int64 `json:"p"` // unix nanoseconds
}

// Kind names the job kind.
func (benchArgs) Kind() string { return "bench" }

// benchWorker does nothing but note when it started and returned; River
// records the completion itself.
type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	start   *latencies // nil: not recorded
	settled *settling  // nil: not recorded
}

// Work records the push → start latency, and when it returns.
func (w *benchWorker) Work(_ context.Context, job *river.Job[benchArgs]) error {
	if w.start != nil {
		w.start.since(job.Args.Pushed, time.Now())
	}
	w.settled.handled(job.ID, time.Now())
	return nil
}

// setupRiver brings a fresh database to River's schema with River's migrator.
func setupRiver(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// riverTuning is how a River client fetches jobs: its workers and its fetch
// settings (zero: River's defaults, a cooldown of 100 ms between fetches
// and a poll every second).
type riverTuning struct {
	name                string // as the notes say it
	workers             int    // MaxWorkers of the default queue
	cooldown, pollEvery time.Duration
}

// riverTuned is River as its own benchmark (river bench, in
// cmd/river/riverbench) runs it: the reference of every ratio. riverDefaults
// is River with its default fetch settings and the same workers.
var (
	riverTuned    = riverTuning{name: "tuned as river bench runs it", workers: 2000, cooldown: 2 * time.Millisecond, pollEvery: 20 * time.Millisecond}
	riverDefaults = riverTuning{name: "default fetch settings", workers: 2000}
)

// String describes the tuning for the notes.
func (t riverTuning) String() string {
	cooldown, poll := cmp.Or(t.cooldown, river.FetchCooldownDefault), cmp.Or(t.pollEvery, river.FetchPollIntervalDefault)
	return fmt.Sprintf("MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s", t.workers, cooldown, poll)
}

// newRiverClient returns a client tuned as t whose worker records the
// push → start latency in start and its returns in settled (nil: not
// recorded), or an insert-only client when t has no workers.
func newRiverClient(pool *pgxpool.Pool, t riverTuning, start *latencies, settled *settling) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, &benchWorker{start: start, settled: settled})
	cfg := &river.Config{
		Workers:           ws,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		FetchCooldown:     t.cooldown,
		FetchPollInterval: t.pollEvery,
	}
	if t.workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: t.workers}}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

// riverInserter is the tuning of a client that only inserts.
var riverInserter = riverTuning{name: "insert only"}

// riverJobs returns n jobs stamped with the current time.
func riverJobs(n int) []river.InsertManyParams {
	args := benchArgs{Pushed: time.Now().UnixNano()}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: args}
	}
	return params
}

// riverPush inserts n jobs in batches of size with InsertManyFast (COPY),
// one batch per transaction, one after the other.
func riverPush(ctx context.Context, client *river.Client[pgx.Tx], n, size int) error {
	for first := 0; first < n; first += size {
		if _, err := client.InsertManyFast(ctx, riverJobs(min(size, n-first))); err != nil {
			return err
		}
	}
	return nil
}

// riverSingleInsert inserts n jobs with Insert, which runs a transaction
// of its own, from producers goroutines at once.
func riverSingleInsert(ctx context.Context, client *river.Client[pgx.Tx], _ *pgxpool.Pool, n, producers int) error {
	return concurrently(ctx, n, producers, func(ctx context.Context, _ int) error {
		_, err := client.Insert(ctx, benchArgs{Pushed: time.Now().UnixNano()}, nil)
		return err
	})
}

// riverSingleInsertTx inserts n jobs with InsertTx, each in a transaction
// the producer begins and commits, from producers goroutines at once.
func riverSingleInsertTx(ctx context.Context, client *river.Client[pgx.Tx], pool *pgxpool.Pool, n, producers int) error {
	return concurrently(ctx, n, producers, func(ctx context.Context, _ int) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := client.InsertTx(ctx, tx, benchArgs{Pushed: time.Now().UnixNano()}, nil); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

// completions subscribes to the jobs the client completes. River sends the
// event once the completion is committed.
func completions(client *river.Client[pgx.Tx]) (<-chan *river.Event, func()) {
	return client.SubscribeConfig(&river.SubscribeConfig{
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
		ChanSize: 1 << 21,
	})
}

// riverBurn starts the client on a full queue of n jobs and waits until all
// are completed or timeout passes; it returns how many were completed. The
// caller stops the client, once the clock has stopped.
func riverBurn(ctx context.Context, client *river.Client[pgx.Tx], n int, timeout time.Duration) (int, string, error) {
	events, cancel := completions(client)
	defer cancel()
	over, release := closeAfter(timeout)
	defer release()
	if err := client.Start(ctx); err != nil {
		return 0, "", err
	}
	done := 0
	for done < n {
		select {
		case <-events:
			done++
		case <-over:
			return done, fmt.Sprintf("cut short after %s", timeout), nil
		}
	}
	return done, "", nil
}

// stopRiver stops the client, cancelling its jobs if it does not stop soon.
func stopRiver(client *river.Client[pgx.Tx]) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		_ = client.StopAndCancel(context.Background())
	}
}

// eventPushed returns the push time stored in a completed job's arguments.
func eventPushed(job *rivertype.JobRow) (int64, bool) {
	var args benchArgs
	if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
		return 0, false
	}
	return args.Pushed, true
}

// riverGrowth stores n jobs already completed straight through SQL (the
// counterpart of taskGrowth) and vacuums and analyzes River's table.
func riverGrowth(ctx context.Context, pool *pgxpool.Pool, n int) error {
	_, err := pool.Exec(ctx, `
INSERT INTO river_job (state, attempt, max_attempts, attempted_at, finalized_at, args, kind, queue, priority)
SELECT 'completed', 1, 25, now(), now(), '{"p":0}', 'bench', 'default', 1
FROM generate_series(1, $1::int)`, n)
	if err != nil {
		return fmt.Errorf("store completed jobs: %w", err)
	}
	_, err = pool.Exec(ctx, "VACUUM ANALYZE river_job")
	return err
}
