package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The sizing scenario (issue 26, point 4) measures what the sizing guide
// in README and docs/operating.md says: a busy topic's WAL, server CPU and
// table size per million tasks under autovacuum as PostgreSQL ships it and
// as the guide tunes it, and what many topics (one partition each) cost.
// It runs only when named (--only sizing): it turns autovacuum on for its
// own runs, and its million tasks take minutes.

// Sizing is what the sizing scenario measured.
type Sizing struct {
	Busy   []BusyTopic  `json:"busy"`
	Topics []TopicCount `json:"topics"`
}

// BusyTopic is one steady run of a busy topic: producers and consumers at
// once until Tasks were completed, completed tasks purged as they age.
type BusyTopic struct {
	Autovacuum  string  `json:"autovacuum"` // "default" or "tuned"
	Settings    string  `json:"settings"`   // the partition's storage parameters and the server's naptime
	Tasks       int     `json:"tasks"`
	Seconds     float64 `json:"seconds"`
	WALBytes    float64 `json:"wal_bytes"`
	CPUSeconds  float64 `json:"server_cpu_seconds"`
	PeakDead    int64   `json:"peak_dead_tuples"` // the partition's n_dead_tup, sampled every second
	PeakBytes   int64   `json:"peak_bytes"`       // the partition's heap and indexes, sampled every second
	EndBytes    int64   `json:"end_bytes"`
	LiveAtEnd   int64   `json:"live_at_end"` // tasks left (the retained completed ones)
	Autovacuums int64   `json:"autovacuums"`
	PollP50MS   float64 `json:"poll_p50_ms"` // a consumer's step: a poll of 100 and their completion
	PollP99MS   float64 `json:"poll_p99_ms"`
}

// TopicCount is the cost of a database holding Topics topics.
type TopicCount struct {
	Topics          int     `json:"topics"`
	CreateSeconds   float64 `json:"create_seconds"`    // Initialize of every topic, one after the other
	Relations       int64   `json:"relations"`         // pg_class rows of the database
	CatalogBytes    int64   `json:"database_bytes"`    // the database's size with every topic empty
	BurnRate        float64 `json:"burn_tasks_per_s"`  // one topic's burn-down among them
	CountAllMS      float64 `json:"count_all_ms"`      // Count over every topic; -1 when it failed
	CountAllFailure string  `json:"count_all_failure"` // the error of Count over every topic
}

// busyProfiles are the autovacuum settings of the busy runs: none (the
// server's, as PostgreSQL ships them, naptime 1 min) and the guide's,
// for a partition that is rewritten all the time: vacuum after a fixed
// number of dead rows rather than a fraction of a table that keeps
// growing, without the cost delay, and a server naptime of 10 s.
var busyProfiles = []struct{ name, naptime, storage string }{
	{"default", "60s", ""},
	{"tuned", "10s", "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000, " +
		"autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000, " +
		"autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 50000, autovacuum_vacuum_cost_delay = 0"},
}

// retained is how many of the latest tasks a busy run keeps: older
// completed ones are purged every purgeEvery, as an operator's retention
// would.
const (
	retained   = 100_000
	purgeEvery = 2 * time.Second
)

func runSizing(ctx context.Context, b *bench) error {
	s := &Sizing{}
	million, counts := b.scale.busy, b.scale.topicCounts
	restore, err := b.turnOnAutovacuum(ctx)
	if err != nil {
		return err
	}
	defer restore()
	for _, p := range busyProfiles {
		if err := b.serverSetting(ctx, "autovacuum_naptime", p.naptime); err != nil {
			return err
		}
		var run BusyTopic
		_, err := b.side(ctx, "sizing", p.name, func(pool *pgxpool.Pool) (result, error) {
			var err error
			run, err = busyTopic(ctx, pool, million, p.storage)
			run.Autovacuum, run.Settings = p.name, "naptime "+p.naptime
			if p.storage != "" {
				run.Settings += "; " + p.storage
			}
			return result{tasks: run.Tasks, elapsed: time.Duration(run.Seconds * float64(time.Second))}, err
		})
		if err != nil {
			return err
		}
		s.Busy = append(s.Busy, run)
	}
	for _, n := range counts {
		var tc TopicCount
		_, err := b.side(ctx, "sizing", fmt.Sprintf("topics%d", n), func(pool *pgxpool.Pool) (result, error) {
			var err error
			tc, err = manyTopics(ctx, pool, n, b.scale.consumers)
			return result{}, err
		})
		if err != nil {
			return err
		}
		s.Topics = append(s.Topics, tc)
	}
	b.report.Sizing = s
	return nil
}

// turnOnAutovacuum turns the server's autovacuum on, and returns what
// gives the server back the autovacuum and naptime it had (the bench's own
// server: autovacuum off).
func (b *bench) turnOnAutovacuum(ctx context.Context) (restore func(), err error) {
	var was string
	if err := b.admin.QueryRow(ctx, "SHOW autovacuum").Scan(&was); err != nil {
		return nil, err
	}
	restore = func() {
		ctx := context.WithoutCancel(ctx)
		for _, name := range []string{"autovacuum", "autovacuum_naptime"} {
			_, _ = b.admin.Exec(ctx, "ALTER SYSTEM RESET "+name)
		}
		_, _ = b.admin.Exec(ctx, "SELECT pg_reload_conf()")
		var now string
		if b.admin.QueryRow(ctx, "SHOW autovacuum").Scan(&now) == nil && now != was {
			_ = b.serverSetting(ctx, "autovacuum", was)
		}
	}
	if err := b.serverSetting(ctx, "autovacuum", "on"); err != nil {
		restore()
		return nil, err
	}
	// A reload applies the setting at once, but SHOW reads this session's
	// copy, which follows the reload a moment later.
	var on string
	for range 50 {
		if err := b.admin.QueryRow(ctx, "SHOW autovacuum").Scan(&on); err != nil || on == "on" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if on != "on" {
		restore()
		return nil, errors.New("autovacuum stays off: the server sets it on its command line, which ALTER SYSTEM cannot override")
	}
	return restore, nil
}

// serverSetting sets a server-wide setting that a reload applies (name
// and value are the bench's own constants).
func (b *bench) serverSetting(ctx context.Context, name, value string) error {
	if _, err := b.admin.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", name, value)); err != nil {
		return fmt.Errorf("set %s (the sizing scenario needs a superuser): %w", name, err)
	}
	_, err := b.admin.Exec(ctx, "SELECT pg_reload_conf()")
	return err
}

// busyTopic pushes n tasks in batches of pollSize while consumers poll and
// complete them, purges completed tasks beyond the latest retained, and
// reads the partition's size and dead rows every second.
func busyTopic(ctx context.Context, pool *pgxpool.Pool, n int, storage string) (BusyTopic, error) {
	run := BusyTopic{Tasks: n}
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return run, err
	}
	if storage != "" {
		if _, err := pool.Exec(ctx, "ALTER TABLE "+partition()+" SET ("+storage+")"); err != nil {
			return run, err
		}
	}
	if err := settle(ctx, pool); err != nil {
		return run, err
	}
	consumers, err := newConsumers(ctx, pool, 4, nil, nil)
	if err != nil {
		return run, err
	}
	meter, err := startCost(ctx, pool)
	if err != nil {
		return run, err
	}
	started := time.Now()
	var (
		completed atomic.Int64
		polls     latencies
		mu        sync.Mutex
	)
	work, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(work)
	g.Go(func() error { // the producer
		for pushed := 0; pushed < n; pushed += pollSize {
			if _, err := repo.Push(gctx, pool, topic, taskapi.Append, creations(pushed, min(pollSize, n-pushed), uniqueIdentifier)...); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range consumers {
		g.Go(func() error {
			for completed.Load() < int64(n) {
				began := time.Now()
				k, err := c.step(gctx)
				if err != nil {
					return err
				}
				mu.Lock()
				polls.d = append(polls.d, time.Since(began))
				mu.Unlock()
				completed.Add(int64(k))
				if k == 0 {
					time.Sleep(idlePause)
				}
			}
			return nil
		})
	}
	sampled := make(chan error, 1)
	go func() { sampled <- sample(work, pool, repo, &run) }()
	err = g.Wait() // every task completed: the workers end by themselves
	run.Seconds = time.Since(started).Seconds()
	// Read before the sampler is stopped: a statement cut by its context
	// closes its connection, and the CPU of a backend gone is not read.
	c, cerr := meter.stop(ctx)
	stop()
	if err := errors.Join(err, cerr, <-sampled); err != nil {
		return run, err
	}
	run.WALBytes, run.CPUSeconds = c.WALBytes, c.CPUSeconds
	run.PollP50MS, _ = polls.percentile(50, false)
	run.PollP99MS, _ = polls.percentile(99, false)
	err = pool.QueryRow(ctx, `SELECT pg_total_relation_size(relid), n_live_tup, autovacuum_count
		FROM pg_stat_user_tables WHERE relid = $1::regclass`, partition()).Scan(&run.EndBytes, &run.LiveAtEnd, &run.Autovacuums)
	return run, err
}

// sample reads the partition's size and dead rows every second, and purges
// the completed tasks older than the latest retained every purgeEvery,
// until ctx ends.
func sample(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, run *BusyTopic) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPurge := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var bytes, dead, last int64
		err := pool.QueryRow(ctx, `SELECT pg_total_relation_size(relid), n_dead_tup,
			(SELECT coalesce(max(sequence), 0) FROM public.task WHERE topic = $2)
			FROM pg_stat_user_tables WHERE relid = $1::regclass`, partition(), topic).Scan(&bytes, &dead, &last)
		if err == nil && time.Since(lastPurge) >= purgeEvery && last > retained {
			lastPurge = time.Now()
			_, err = repo.Purge(ctx, pool, topic, taskapi.Range{From: taskapi.Inception, To: last - retained}, taskapi.Succeeded)
		}
		if ctx.Err() != nil {
			return nil // the run ended during the reading
		}
		if err != nil {
			return err
		}
		run.PeakBytes, run.PeakDead = max(run.PeakBytes, bytes), max(run.PeakDead, dead)
	}
}

// manyTopics initializes n topics, then measures a burn-down of one of
// them and a count over all of them.
func manyTopics(ctx context.Context, pool *pgxpool.Pool, n, consumers int) (TopicCount, error) {
	tc := TopicCount{Topics: n, CountAllMS: -1}
	repo, err := setupTaskrepo(ctx, pool) // the topic "bench"
	if err != nil {
		return tc, err
	}
	began := time.Now()
	for i := 1; i < n; i++ {
		if _, err := repo.Initialize(ctx, pool, fmt.Sprintf("tenant-%05d", i)); err != nil {
			return tc, fmt.Errorf("topic %d of %d: %w", i+1, n, err)
		}
	}
	tc.CreateSeconds = time.Since(began).Seconds()
	err = pool.QueryRow(ctx, "SELECT count(*), pg_database_size(current_database()) FROM pg_class").Scan(&tc.Relations, &tc.CatalogBytes)
	if err != nil {
		return tc, err
	}
	const burn = 50_000
	if err := taskPush(ctx, repo, pool, taskapi.Append, burn, pushBatch, uniqueIdentifier); err != nil {
		return tc, err
	}
	r, err := measure(ctx, pool, func() (int, string, error) { return taskBurn(ctx, pool, consumers, 3*time.Minute) })
	if err != nil {
		return tc, err
	}
	tc.BurnRate = r.rate()
	began = time.Now()
	if _, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded); err != nil {
		tc.CountAllFailure = err.Error()
		fmt.Fprintf(os.Stderr, "   count over %d topics: %v\n", n, err)
	} else {
		tc.CountAllMS = float64(time.Since(began).Microseconds()) / 1000
	}
	return tc, nil
}

// sizingText is the block "sizing" of the docs: the busy runs and the
// costs of many topics, or a line that says the results hold none.
func sizingText(r *Report) string {
	s := r.Sizing
	var b strings.Builder
	b.WriteString("| autovacuum | tasks | tasks/s per server core | WAL per million tasks | peak dead rows | peak size of the partition | autovacuum runs | a batch polled and completed, p50 / p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, run := range s.Busy {
		perMillion := 1e6 / float64(run.Tasks)
		fmt.Fprintf(&b, "| %s | %d in %.0f s | %.0f | %.2f GiB | %d | %.0f MiB | %d | %.1f / %.0f ms |\n",
			run.Autovacuum, run.Tasks, run.Seconds, float64(run.Tasks)/run.CPUSeconds, run.WALBytes*perMillion/(1<<30),
			run.PeakDead, float64(run.PeakBytes)/(1<<20), run.Autovacuums, run.PollP50MS, run.PollP99MS)
	}
	b.WriteString("\n| topics | relations in the database | creating a topic, on average | one topic's burn-down among them | Count over every topic |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, tc := range s.Topics {
		create, count := "-", "failed: "+tc.CountAllFailure
		if tc.Topics > 1 {
			create = fmt.Sprintf("%.0f ms", tc.CreateSeconds*1000/float64(tc.Topics-1))
		}
		if tc.CountAllMS >= 0 {
			count = fmt.Sprintf("%.0f ms", tc.CountAllMS)
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %.0f tasks/s | %s |\n", tc.Topics, tc.Relations, create, tc.BurnRate, count)
	}
	date, _, _ := strings.Cut(r.Date, "T")
	fmt.Fprintf(&b, "\nMeasured on %s by `%s`: %d vCPUs, %s; the tuned settings are `%s`.\n",
		date, r.Command, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2), busyProfiles[len(busyProfiles)-1].storage)
	return b.String()
}

// sizingSummary is the block "sizing_summary" of README: the few figures a
// reader sizes a server with, from the tuned busy run and the most topics.
func sizingSummary(r *Report) string {
	s := r.Sizing
	if len(s.Busy) == 0 || len(s.Topics) == 0 {
		return "No sizing was measured in these results.\n"
	}
	run, many := s.Busy[len(s.Busy)-1], s.Topics[len(s.Topics)-1]
	perMillion := 1e6 / float64(run.Tasks)
	count := "failed: " + many.CountAllFailure
	if many.CountAllMS >= 0 {
		count = fmt.Sprintf("took %.0f ms", many.CountAllMS)
	}
	date, _, _ := strings.Cut(r.Date, "T")
	return fmt.Sprintf("- A busy topic (push, poll, complete, purge at once) cost the backends serving it %.0f µs of CPU per task: about %.0f tasks/s per server core.\n"+
		"- A million tasks wrote %.1f GiB of WAL; with autovacuum tuned for it, the topic's partition peaked at %.0f MiB with %.0fk dead rows.\n"+
		"- %d topics (partitions) held %d relations; creating a topic took %.0f ms on average, one topic's burn-down ran at %.0f tasks/s among them, and a count over every topic %s.\n\n"+
		"Measured on %s by `%s` (%d vCPUs, %s).\n",
		run.CPUSeconds*1e6/float64(run.Tasks), float64(run.Tasks)/run.CPUSeconds,
		run.WALBytes*perMillion/(1<<30), float64(run.PeakBytes)/(1<<20), float64(run.PeakDead)/1000,
		many.Topics, many.Relations, many.CreateSeconds*1000/float64(max(many.Topics-1, 1)), many.BurnRate, count,
		date, r.Command, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2))
}
