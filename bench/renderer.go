package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// The renderer of issue 40 (point 5): a multi-tenant service with the
// tenant as the tasks' identifier, a fleet bound (Limits.Active) and a
// share per tenant (Limits.PerIdentifier), consumed by three Clients with
// ParallelTx and the default pollers. The tenant is a key of fairness, not
// of order: the handler runs a tenant's tasks at once (AnyOrder). One
// tenant has a backlog; twenty quiet ones push a few tasks a second each.
// What counts: how soon a quiet tenant's task starts, and how much of the
// fleet bound is in use while the backlog lasts: its Active tasks, which
// the bound counts and a sampler of the database sees; the share that is
// rendering is reported beside it. The tenants can use all of it: the
// backlog's tenant 20 of 24 at most, the quiet ones some 3 on average (60
// tasks a second of 55 ms each), so the load, not the runtime, would hold
// the share under 0.97.
const (
	rendererClients    = 3
	rendererWorkers    = 10 // ParallelTx(10) per Client: 30 workers for a fleet bound of 24, so that a Client with work polls whenever the bound has room
	rendererBound      = 24
	rendererShare      = 20                     // PerIdentifier: the backlog's tenant may fill most of the bound, and leaves the quiet ones 4 at least
	rendererQuiet      = 20                     // quiet tenants
	rendererQuietEvery = 333 * time.Millisecond // a few a second: with the share, the tenants ask for more than the bound holds
	rendererRender     = 50 * time.Millisecond
	rendererSample     = 100 * time.Millisecond
	rendererPoolSize   = rendererWorkers + 4 // each Client's own pool, as a process of its own has
	rendererBacklogID  = "tenant-backlog"
)

// rendererScale is the backlog and the quiet tenants' window of a run.
func rendererScale(quick bool) (backlog int, window time.Duration) {
	if quick {
		return 5_000, 10 * time.Second
	}
	return 50_000, 60 * time.Second
}

// renderRun is what one renderer run heard.
type renderRun struct {
	start        latencies    // quiet tenants' push → start
	renders      atomic.Int64 // renders running now
	backlogLeft  atomic.Int64 // the backlog's tasks not rendered yet
	samples      int
	activeSum    float64 // Active tasks of the topic, summed over the samples
	rendersSum   float64
	quietPushed  atomic.Int64
	backlogStart time.Time
	backlogRate  float64      // backlog tasks rendered per second within the window
	polls        atomic.Int64 // polls that returned tasks, of every Client
	polled       atomic.Int64 // the tasks they returned
	empty        atomic.Int64 // polls that returned none
	limited      atomic.Int64 // polls the topic's limits held back
}

// Notify counts the Clients' polls (a taskproc.Observer).
func (run *renderRun) Observe(e taskproc.Event) {
	switch e.Kind {
	case taskproc.EventPolled:
		run.polls.Add(1)
		run.polled.Add(int64(len(e.Tasks)))
	case taskproc.EventEmpty:
		run.empty.Add(1)
	case taskproc.EventLimited:
		run.limited.Add(1)
	}
}

// runRenderer runs the renderer's scenario (opt-in: --only renderer).
func runRenderer(ctx context.Context, b *bench) error {
	backlog, window := rendererScale(b.report.Quick)
	pool, drop, err := b.fresh(ctx, "renderer", "taskrepo")
	if err != nil {
		return err
	}
	defer drop()
	run, err := renderOnce(ctx, pool, backlog, window)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("%d Clients, each its own owner and pool, ParallelTx(%d, render, AnyOrder()), default pollers, WithNotifier; Limits{Active: %d, PerIdentifier: %d}; "+
		"one tenant's backlog of %d tasks, %d quiet tenants each pushing one task every %v (each from a phase of its own) for %v; every render takes %v",
		rendererClients, rendererWorkers, rendererBound, rendererShare, backlog, rendererQuiet, rendererQuietEvery, window, rendererRender)
	for _, p := range []float64{50, 99} {
		v, ok := run.start.percentile(p, false)
		if !ok {
			return errors.New("renderer: no quiet task started")
		}
		f := Figure{Key: fmt.Sprintf("renderer_quiet_start_p%.0f", p), Unit: "ms", Lower: true, Taskrepo: &v,
			Name: fmt.Sprintf("renderer: a quiet tenant's push → start p%.0f, beside a backlog", p), Note: note}
		if p == 99 {
			f.Ceiling = 1000
		}
		b.report.add(f)
	}
	active, renders := run.activeSum/float64(run.samples)/rendererBound, run.rendersSum/float64(run.samples)
	inUse := renders / rendererBound
	b.report.add(Figure{Key: "renderer_active", Unit: "×", Taskrepo: &active, Target: 0.9,
		Name: "renderer: share of the fleet bound in use (Active tasks ÷ Limits.Active) while the backlog lasts",
		Note: fmt.Sprintf("mean of %d samples every %v, each a count of the topic's Active tasks on a connection of its own", run.samples, rendererSample)})
	b.report.add(Figure{Key: "renderer_bound_in_use", Unit: "×", Taskrepo: &inUse,
		Name: "renderer: share of the fleet bound rendering (renders at once ÷ Limits.Active) while the backlog lasts",
		Note: fmt.Sprintf("mean of %d samples every %v; a task claimed but not rendering yet (polled, or settling after its render) does not count", run.samples, rendererSample)})
	b.report.add(Figure{Key: "renderer_backlog_rate", Unit: "tasks/s", Taskrepo: &run.backlogRate,
		Name: "renderer: the backlog's tasks rendered per second"})
	// The percentiles are of the quiet tasks that started within the window.
	started := 100 * float64(run.start.count()) / float64(max(run.quietPushed.Load(), 1))
	b.report.add(Figure{Key: "renderer_quiet_started", Unit: "%", Taskrepo: &started,
		Name: "renderer: quiet tenants' tasks started within the window, of those pushed (the percentiles are of these)"})
	fmt.Fprintf(os.Stderr, "   quiet pushed %d, started %d; bound rendering %.2f, claimed %.2f, backlog %.0f tasks/s; %d polls of %.1f tasks, %d empty, %d held by limits\n",
		run.quietPushed.Load(), run.start.count(), inUse, active, run.backlogRate,
		run.polls.Load(), float64(run.polled.Load())/float64(max(run.polls.Load(), 1)), run.empty.Load(), run.limited.Load())
	return nil
}

// renderOnce sets up the topic and its backlog, runs the Clients and the
// quiet tenants for window, sampling, and stops them.
func renderOnce(ctx context.Context, pool *pgxpool.Pool, backlog int, window time.Duration) (*renderRun, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return nil, err
	}
	if err := repo.SetLimits(ctx, pool, topic, taskapi.Limits{Active: rendererBound, PerIdentifier: rendererShare}); err != nil {
		return nil, err
	}
	if err := taskPush(ctx, repo, pool, taskapi.Append, backlog, pushBatch, func(int) string { return rendererBacklogID }); err != nil {
		return nil, err
	}
	// The backlog built up before the run, as after a fault: autovacuum
	// (off on the bench's server) would have analyzed it by then. Without
	// statistics the planner takes the topic's partition for empty and walks
	// the tenants of a keyed poll by reading every row (200 ms a poll).
	if _, err := pool.Exec(ctx, "ANALYZE task"); err != nil {
		return nil, err
	}
	run := &renderRun{}
	run.backlogLeft.Store(int64(backlog))
	clients, closePools, err := renderClients(ctx, pool, run)
	defer closePools()
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
	}
	run.backlogStart = time.Now()
	quiet, cancelQuiet := context.WithTimeout(ctx, window)
	var producers sync.WaitGroup
	errs := make(chan error, rendererQuiet)
	for i := range rendererQuiet {
		producers.Go(func() { errs <- pushQuiet(quiet, repo, pool, fmt.Sprintf("tenant-%02d", i), run) })
	}
	run.sample(quiet, repo, pool)
	producers.Wait()
	cancelQuiet()
	close(errs)
	run.backlogRate = float64(int64(backlog)-run.backlogLeft.Load()) / time.Since(run.backlogStart).Seconds()
	stop, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range clients {
		err = errors.Join(err, c.Stop(stop))
	}
	for e := range errs {
		err = errors.Join(err, e)
	}
	run.start.resolve()
	return run, err
}

// renderClients makes the Clients, each with a pool of its own on pool's
// database; the function returned closes those pools.
func renderClients(ctx context.Context, pool *pgxpool.Pool, run *renderRun) ([]*taskproc.Client[taskpg.DB], func(), error) {
	var clients []*taskproc.Client[taskpg.DB]
	var pools []*pgxpool.Pool
	closeAll := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	for i := range rendererClients {
		cfg := pool.Config().Copy()
		cfg.MaxConns = rendererPoolSize
		own, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, closeAll, err
		}
		pools = append(pools, own)
		repo, err := registered(ctx, own, fmt.Sprintf("bench-renderer-%d", i))
		if err != nil {
			return nil, closeAll, err
		}
		client, err := taskproc.New(repo, taskpg.Transact(own), taskproc.WithPause(procPause),
			taskproc.WithNotifier(taskpg.NewNotifier(own)), taskproc.WithObserver(run))
		if err != nil {
			return nil, closeAll, err
		}
		if err := client.Handle(topic, taskproc.ParallelTx(rendererWorkers, run.render, taskproc.AnyOrder())); err != nil {
			return nil, closeAll, err
		}
		clients = append(clients, client)
	}
	return clients, closeAll, nil
}

// render renders task: it notes when a quiet tenant's task started, and
// takes rendererRender.
func (run *renderRun) render(ctx context.Context, _ taskpg.DB, task taskapi.Task) (taskapi.Decision, error) {
	run.renders.Add(1)
	defer run.renders.Add(-1)
	if task.Identifier == rendererBacklogID {
		defer run.backlogLeft.Add(-1)
	} else if pushed, err := strconv.ParseInt(task.Input, 10, 64); err == nil {
		run.start.since(pushed, time.Now())
	}
	select {
	case <-time.After(rendererRender):
		return taskapi.Decision{Result: taskapi.Success}, nil
	case <-ctx.Done():
		return taskapi.Decision{}, ctx.Err()
	}
}

// pushQuiet pushes one task of tenant every rendererQuietEvery until ctx
// ends, its input the time of the push. Each tenant starts at a moment of
// its own within the first period: tenants in step would push 20 tasks
// at once, which would wait for each other rather than for the backlog.
func pushQuiet(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, tenant string, run *renderRun) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(rand.N(rendererQuietEvery)):
	}
	tick := time.NewTicker(rendererQuietEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now().UnixNano()
		_, err := repo.Push(ctx, pool, topic, taskapi.Append, taskapi.Creation{Identifier: tenant, Input: strconv.FormatInt(now, 10)})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		noteCommit(now)
		run.quietPushed.Add(1)
	}
}

// sample adds up, every rendererSample until ctx ends and while the
// backlog lasts, the Active tasks of the topic and the renders running.
func (run *renderRun) sample(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool) {
	tick := time.NewTicker(rendererSample)
	defer tick.Stop()
	for run.backlogLeft.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: topic, States: []taskapi.State{taskapi.Active}},
			taskapi.Range{From: taskapi.Inception, To: taskapi.MaxSequence})
		if err != nil {
			continue // the window's end cut it short
		}
		active := int64(0)
		for _, c := range counts[topic] {
			active += c.Count
		}
		run.samples++
		run.activeSum += float64(active)
		run.rendersSum += float64(run.renders.Load())
	}
}
