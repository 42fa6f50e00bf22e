package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// contBatch is the batch of the producers flat out; the paced producers
// push one task per transaction.
const contBatch = 100

// pace is one continuous run: flat out (rate 0) or paced at rate tasks/s,
// producers pushing batches of batch tasks.
type pace struct {
	rate, batch, producers int
	// The targets of taskproc's latencies: the least ratio to tuned River
	// and the ceiling in ms, by "commit_start_p99" and the like; and the
	// least ratio of its server CPU per task to River's.
	targets, ceilings map[string]float64
	cpuTarget         float64
}

// allPaces are the continuous runs: flat out, and paced at 1,000 and at 100
// tasks/s, one task per push, where a design that polls shows its pause
// and a design that wakes per push shows what a wake-up costs. The paced
// targets are issue 41's: commit → start p50 and p99 no worse than tuned
// River's, server CPU per task at least River's at 1,000/s and 0.85 of it
// at 100/s (with River's settlement window, windowedCPUTarget at both);
// flat out, 1.3× River's (the rate's 1.5× is reportContinuous's).
func allPaces(s scale) []pace {
	even := map[string]float64{"commit_start_p50": 1, "commit_start_p99": 1}
	return []pace{
		{rate: 0, batch: contBatch, producers: s.producers, cpuTarget: 1.3},
		{rate: 1_000, batch: 1, producers: s.singleProducers, targets: even, cpuTarget: 1},
		{rate: slowRate, batch: 1, producers: s.producers, targets: even, ceilings: map[string]float64{"start_p99": 5}, cpuTarget: 0.85},
	}
}

// paces are the continuous runs to make: those --paces names, else all.
func (b *bench) paces() []pace {
	all := allPaces(b.scale)
	if len(b.onlyPaces) == 0 {
		return all
	}
	return slices.DeleteFunc(all, func(p pace) bool { return !slices.Contains(b.onlyPaces, p.key()) })
}

// paceKeys are the keys of the continuous runs, for --paces.
func paceKeys() []string {
	var keys []string
	for _, p := range allPaces(fullScale) {
		keys = append(keys, p.key())
	}
	return keys
}

// slowRate is the rate of the slow paced run.
const slowRate = 100

// key and name name the run in the report.
func (p pace) key() string {
	if p.rate == 0 {
		return "flat"
	}
	return "paced_" + strings.ToLower(abbreviate(p.rate))
}

func (p pace) name() string {
	if p.rate == 0 {
		return "continuous, flat out"
	}
	return fmt.Sprintf("continuous, paced at %s tasks/s", abbreviate(p.rate))
}

// about says how the producers push.
func (p pace) about(d time.Duration) string {
	if p.batch == 1 {
		return fmt.Sprintf("%d producers pushing one task per transaction, %s tasks/s in all, for %s", p.producers, abbreviate(p.rate), d)
	}
	return fmt.Sprintf("%d producers pushing batches of %d as fast as they can for %s", p.producers, p.batch, d)
}

// runContinuous measures producers and consumers at work together, flat out
// and paced, for a fixed window and the drain of what is left after it:
// completed tasks per second within the window, the latency of every
// pushed task from its push and from its commit to its start and its
// committed completion, the server's cost per task, and, paced, the
// statements of a task's life. taskrepo works with its own consumers and
// through taskproc, River tuned as river bench runs it and with its
// default fetch settings. taskproc and tuned River run the scale's rounds
// in alternating order and the median round counts, its statements
// included.
func runContinuous(ctx context.Context, b *bench) error {
	for _, p := range b.paces() {
		scenario := "continuous_" + p.key()
		task, err := b.side(ctx, scenario, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
			return b.taskContinuous(ctx, pool, p)
		})
		if err != nil {
			return err
		}
		sides := []sideRun{
			{"taskproc", func(pool *pgxpool.Pool) (result, error) { return b.procContinuous(ctx, pool, p, b.scale.proc) }},
			{"river", func(pool *pgxpool.Pool) (result, error) { return b.riverContinuous(ctx, pool, riverTuned, p) }}}
		if p.rate > 0 {
			sides = append(sides, sideRun{"taskproc-window", func(pool *pgxpool.Pool) (result, error) {
				return b.procContinuous(ctx, pool, p, b.scale.proc.windowed())
			}})
		}
		medians, err := b.alternate(ctx, scenario, b.scale.rounds, sides...)
		if err != nil {
			return err
		}
		proc, river := medians[0], medians[1]
		var windowed *result
		if len(medians) > 2 {
			windowed = &medians[2]
		}
		defaults, err := b.side(ctx, scenario, "river-defaults", func(pool *pgxpool.Pool) (result, error) {
			return b.riverContinuous(ctx, pool, riverDefaults, p)
		})
		if err != nil {
			return err
		}
		b.reportContinuous(scenario, p, &task, &proc, rivers{tuned: &river, defaults: &defaults})
		if windowed != nil {
			b.reportWindowed(scenario, p, windowed, rivers{tuned: &river, defaults: &defaults})
		}
	}
	return nil
}

// reportContinuous adds the figures of one continuous run.
func (b *bench) reportContinuous(scenario string, p pace, task, proc *result, rivers rivers) {
	name, about := p.name(), p.about(b.scale.continuous)
	target := 0.0
	if p.rate == 0 {
		target = 1.5
	}
	b.report.throughput(scenario, name+", completed within the window", task, rivers, 0,
		fmt.Sprintf("%s; taskrepo: %d consumers; %s", about, b.scale.consumers, rivers.note()))
	b.report.latency(scenario, name, task, rivers, nil, nil)
	if p.rate == 0 {
		b.report.backlog(scenario, name, task, rivers)
	}
	b.report.costs(scenario, name, task, rivers, 0)
	procName := strings.Replace(name, "continuous", "continuous through taskproc", 1)
	b.report.throughput(scenario+"_taskproc", procName+", completed within the window", proc, rivers, target,
		fmt.Sprintf("%s; taskproc: %s; %s", about, b.scale.proc, rivers.note()))
	b.report.latency(scenario+"_taskproc", procName, proc, rivers, p.targets, p.ceilings)
	b.report.settling(scenario+"_taskproc", procName, proc, rivers)
	b.report.costs(scenario+"_taskproc", procName, proc, rivers, p.cpuTarget)
	if p.rate == 0 {
		b.report.backlog(scenario+"_taskproc", procName, proc, rivers)
	}
	b.report.statements(scenario, "taskproc", proc)
	b.report.statements(scenario, "River", rivers.tuned)
}

// riverWindow is the settlement window of River's completer below 100
// pending completions (River 0.51.1): the window the bench gives taskproc
// to compare like with like.
const riverWindow = 250 * time.Millisecond

// windowedCPUTarget is the least ratio of taskproc's server CPU per task,
// with riverWindow, to tuned River's.
const windowedCPUTarget = 1.2

// windowed is c with River's settlement window.
func (c procConfig) windowed() procConfig {
	c.settle = riverWindow
	return c
}

// reportWindowed adds the figures of taskproc with River's settlement
// window in one paced run.
func (b *bench) reportWindowed(scenario string, p pace, proc *result, rivers rivers) {
	name := strings.Replace(p.name(), "continuous", "continuous through taskproc with River's settlement window", 1)
	key := scenario + "_taskproc_window"
	b.report.throughput(key, name+", completed within the window", proc, rivers, 0,
		fmt.Sprintf("%s; taskproc: %s; %s", p.about(b.scale.continuous), b.scale.proc.windowed(), rivers.note()))
	b.report.latency(key, name, proc, rivers, nil, nil)
	b.report.settling(key, name, proc, rivers)
	b.report.costs(key, name, proc, rivers, windowedCPUTarget)
	b.report.statements(scenario, "taskproc, settlement window", proc)
}

// produce runs p's producers until over is closed, each pushing a batch of
// p.batch tasks with push as fast as it can, or at p.rate tasks/s in all.
// A paced producer keeps to a schedule (its k-th push is due k intervals
// after its start) rather than a ticker, which would drop the ticks of a
// slow push: behind, it pushes at once until it has caught up. It returns
// how many tasks were pushed.
func produce(over <-chan struct{}, p pace, push func(n int) error) (int, error) {
	var (
		g      errgroup.Group
		pushed atomic.Int64
	)
	for range p.producers {
		g.Go(func() error {
			var interval time.Duration
			if p.rate > 0 {
				interval = time.Duration(p.producers*p.batch) * time.Second / time.Duration(p.rate)
			}
			due := time.Now()
			for !closed(over) {
				if wait := time.Until(due); wait > 0 {
					select {
					case <-time.After(wait):
					case <-over:
						return nil
					}
				}
				if err := push(p.batch); err != nil {
					return err
				}
				pushed.Add(int64(p.batch))
				due = due.Add(interval)
			}
			return nil
		})
	}
	err := g.Wait()
	return int(pushed.Load()), err
}

// runWindow measures one side's continuous run: work runs the side's
// consumers, already set up, until its channel is closed; push pushes n
// tasks and notes their commit. The producers push for the scale's window;
// then the consumers go on until every pushed task is completed (or the
// scale's timeout has passed), so that the latencies cover every task, the
// backlog drained after the window included. The cost and the statements
// cover the window and the drain.
func (b *bench) runWindow(ctx context.Context, pool *pgxpool.Pool, p pace, start, done *latencies,
	work func(stop <-chan struct{}) error, push func(n int) error) (result, error) {
	commits.Clear()
	w := &window{length: b.scale.continuous}
	var stmts *StatementRun
	r, err := measure(ctx, pool, func() (int, string, error) {
		probe := b.probeStatements(ctx, pool)
		stop, quit := make(chan struct{}), make(chan struct{})
		var workErr error
		go func() { defer close(quit); workErr = work(stop) }()
		over, atEnd := closeAfterCounting(w.length, done)
		pushed, err := produce(over, p, push)
		w.pushed, w.inWindow = pushed, <-atEnd
		ended := time.Now()
		w.left = awaitDone(done, pushed, b.scale.timeout, quit)
		w.drain = time.Since(ended)
		close(stop)
		<-quit
		start.resolve()
		done.resolve()
		var readErr error
		stmts, readErr = probe.read(ctx, done.count())
		if stmts != nil {
			stmts.Run = "continuous_" + p.key()
		}
		return done.count(), w.note(), errors.Join(err, workErr, readErr)
	})
	r.start, r.done, r.run, r.stmts = start, done, w, stmts
	return r, err
}

// closeAfterCounting returns a channel closed once d has passed, and one
// that then yields how many tasks done had recorded at that moment.
func closeAfterCounting(d time.Duration, done *latencies) (<-chan struct{}, <-chan int) {
	over, count := make(chan struct{}), make(chan int, 1)
	time.AfterFunc(d, func() {
		count <- done.count()
		close(over)
	})
	return over, count
}

// awaitDone waits until done has recorded pushed tasks, timeout has passed
// or quit is closed (the consumers gave up), and returns how many tasks
// were left.
func awaitDone(done *latencies, pushed int, timeout time.Duration, quit <-chan struct{}) int {
	deadline := time.After(timeout)
	for done.count() < pushed {
		select {
		case <-quit:
			return pushed - done.count()
		case <-deadline:
			return pushed - done.count()
		case <-time.After(time.Millisecond):
		}
	}
	return 0
}

// note tells how fast the producers pushed and how the drain went.
func (w *window) note() string {
	note := fmt.Sprintf("pushed %.0f tasks/s; backlog of %d tasks at the window's end drained in %s",
		float64(w.pushed)/w.length.Seconds(), w.pushed-w.inWindow, w.drain.Round(time.Millisecond))
	if w.left > 0 {
		note += fmt.Sprintf(", %d tasks left undone", w.left)
	}
	return note
}

// taskContinuous runs taskrepo's producers and its own consumers.
func (b *bench) taskContinuous(ctx context.Context, pool *pgxpool.Pool, p pace) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	start, done := &latencies{}, &latencies{}
	cs, err := newConsumers(ctx, pool, b.scale.consumers, start, done)
	if err != nil {
		return result{}, err
	}
	work := func(stop <-chan struct{}) error {
		var g errgroup.Group
		for _, c := range cs {
			g.Go(func() error { return consume(ctx, c, stop) })
		}
		return g.Wait()
	}
	return b.runWindow(ctx, pool, p, start, done, work, taskPusher(ctx, repo, pool))
}

// taskPusher returns the push of taskrepo's producers.
func taskPusher(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool) func(n int) error {
	return func(n int) error {
		cs := creations(0, n, uniqueIdentifier)
		if _, err := repo.Push(ctx, pool, topic, taskapi.Append, cs...); err != nil {
			return err
		}
		pushed, err := strconv.ParseInt(cs[0].Input, 10, 64)
		if err == nil {
			noteCommit(pushed)
		}
		return err
	}
}

// procContinuous runs taskrepo's producers and taskproc's Clients, started
// beforehand; the Clients are stopped once the clock has stopped.
func (b *bench) procContinuous(ctx context.Context, pool *pgxpool.Pool, p pace, cfg procConfig) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	start, done, settled := &latencies{}, &latencies{}, &settling{}
	run, err := newProcRun(pool, cfg, 0, start, done, settled)
	if err != nil {
		return result{}, err
	}
	if err := run.start(ctx); err != nil {
		return result{}, errors.Join(err, run.stop())
	}
	work := func(stop <-chan struct{}) error {
		<-stop
		return run.heard.failure()
	}
	run.heard.recording.Store(true) // before the first push
	r, err := b.runWindow(ctx, pool, p, start, done, work, taskPusher(ctx, repo, pool))
	run.heard.recording.Store(false)
	r.settled = settled
	return r, errors.Join(err, run.stop())
}

// consume polls and completes until over is closed, pausing after empty
// polls.
func consume(ctx context.Context, c *consumer, over <-chan struct{}) error {
	for !closed(over) {
		n, err := c.step(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			select {
			case <-time.After(idlePause):
			case <-over:
			}
		}
	}
	return nil
}

// riverContinuous runs River's producers and its started client, tuned as
// t.
func (b *bench) riverContinuous(ctx context.Context, pool *pgxpool.Pool, t riverTuning, p pace) (result, error) {
	if err := setupRiver(ctx, pool); err != nil {
		return result{}, err
	}
	start, done, settled := &latencies{}, &latencies{}, &settling{}
	client, err := newRiverClient(pool, t, start, settled)
	if err != nil {
		return result{}, err
	}
	events, cancel := completions(client)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	defer stopRiver(client)
	work := func(stop <-chan struct{}) error {
		for {
			select {
			case e := <-events:
				now := time.Now()
				if pushed, ok := eventPushed(e.Job); ok {
					done.since(pushed, now)
				}
				settled.committed(e.Job.ID, now)
			case <-stop:
				return nil
			}
		}
	}
	push := func(n int) error {
		jobs := riverJobs(n)
		var err error
		if n == 1 { // a single insert, as the producer of one task would
			_, err = client.Insert(ctx, jobs[0].Args, nil)
		} else {
			_, err = client.InsertManyFast(ctx, jobs)
		}
		if err == nil {
			noteCommit(jobs[0].Args.(benchArgs).Pushed)
		}
		return err
	}
	r, err := b.runWindow(ctx, pool, p, start, done, work, push)
	r.settled = settled
	return r, err
}
