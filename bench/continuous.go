package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// contBatch is the batch of the producers in the continuous runs, but for
// the slow paced run, whose producers push one task at a time.
const contBatch = 100

// pace is one continuous run: flat out (rate 0) or paced at rate tasks/s,
// the producers pushing batches of batch tasks.
type pace struct {
	rate, batch int
	// The ceilings of taskproc's latencies (by "start_p99" and the like)
	// and the least ratio of its server CPU per task to River's.
	ceilings  map[string]float64
	cpuTarget float64
}

// paces are the continuous runs: flat out, paced at the scale's rate in
// batches, and paced at 100 tasks/s one task at a time, where a design
// that polls shows its pause.
func (b *bench) paces() []pace {
	return []pace{
		{rate: 0, batch: contBatch},
		{rate: b.scale.pacedRate, batch: contBatch, ceilings: map[string]float64{"start_p99": 5, "done_p99": 15}, cpuTarget: 1},
		{rate: slowRate, batch: 1, ceilings: map[string]float64{"start_p99": 5}},
	}
}

// slowRate is the rate of the slow paced run.
const slowRate = 100

// key and name name the run in the report.
func (p pace) key() string {
	switch {
	case p.rate == 0:
		return "flat"
	case p.batch == 1:
		return "paced_slow"
	}
	return "paced"
}

func (p pace) name() string {
	if p.rate == 0 {
		return "continuous, flat out"
	}
	return fmt.Sprintf("continuous, paced at %s tasks/s", abbreviate(p.rate))
}

// runContinuous measures producers and consumers at work together, flat out
// and paced, for a fixed time: completed tasks per second and the latency
// from push to start and to committed completion. taskrepo works with its
// own consumers and through taskproc, River tuned as river bench runs it and
// with its default fetch settings.
func runContinuous(ctx context.Context, b *bench) error {
	for _, p := range b.paces() {
		scenario := "continuous_" + p.key()
		task, err := b.side(ctx, scenario, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
			return b.taskContinuous(ctx, pool, p)
		})
		if err != nil {
			return err
		}
		proc, err := b.side(ctx, scenario, "taskproc", func(pool *pgxpool.Pool) (result, error) {
			return b.procContinuous(ctx, pool, p)
		})
		if err != nil {
			return err
		}
		rivers, err := b.riverSides(ctx, scenario, func(pool *pgxpool.Pool, t riverTuning) (result, error) {
			return b.riverContinuous(ctx, pool, t, p)
		})
		if err != nil {
			return err
		}
		b.reportContinuous(scenario, p, &task, &proc, rivers)
	}
	return nil
}

// reportContinuous adds the figures of one continuous run.
func (b *bench) reportContinuous(scenario string, p pace, task, proc *result, rivers rivers) {
	name := p.name()
	about := fmt.Sprintf("%d producers pushing batches of %d for %s", b.scale.producers, p.batch, b.scale.continuous)
	if p.batch == 1 {
		about = fmt.Sprintf("%d producers pushing one task at a time for %s", b.scale.producers, b.scale.continuous)
	}
	target := 0.0
	if p.rate == 0 {
		target = 1.5
	}
	b.report.throughput(scenario, name+", completed", task, rivers, 0,
		fmt.Sprintf("%s; taskrepo: %d consumers; %s", about, b.scale.consumers, rivers.note()))
	b.report.latency(scenario, name, task, rivers, nil)
	b.report.costs(scenario, name, task, rivers, 0)
	procName := strings.Replace(name, "continuous", "continuous through taskproc", 1)
	b.report.throughput(scenario+"_taskproc", procName+", completed", proc, rivers, target,
		fmt.Sprintf("%s; taskproc: %s; %s", about, b.scale.proc, rivers.note()))
	b.report.latency(scenario+"_taskproc", procName, proc, rivers, p.ceilings)
	b.report.costs(scenario+"_taskproc", procName, proc, rivers, p.cpuTarget)
}

// produce runs the producers until over is closed, each pushing a batch of
// p.batch tasks with push as fast as it can, or at p.rate tasks/s in all.
// It returns how many tasks were pushed.
func produce(over <-chan struct{}, producers int, p pace, push func(n int) error) (int, error) {
	commits.Clear()
	var (
		g      errgroup.Group
		pushed atomic.Int64
	)
	for range producers {
		g.Go(func() error {
			var tick <-chan time.Time
			if p.rate > 0 {
				t := time.NewTicker(time.Duration(producers*p.batch) * time.Second / time.Duration(p.rate))
				defer t.Stop()
				tick = t.C
			}
			for {
				if tick != nil {
					select {
					case <-tick:
					case <-over:
					}
				}
				if closed(over) {
					return nil
				}
				if err := push(p.batch); err != nil {
					return err
				}
				pushed.Add(int64(p.batch))
			}
		})
	}
	err := g.Wait()
	return int(pushed.Load()), err
}

// pushedNote tells how fast the producers pushed.
func pushedNote(pushed int, d time.Duration) string {
	return fmt.Sprintf("pushed %.0f tasks/s", float64(pushed)/d.Seconds())
}

// taskContinuous runs taskrepo's producers and consumers for the scale's
// time.
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
	r, err := measure(ctx, pool, func() (int, string, error) {
		over, release := closeAfter(b.scale.continuous)
		defer release()
		var g errgroup.Group
		for _, c := range cs {
			g.Go(func() error { return consume(ctx, c, over) })
		}
		var pushed int
		g.Go(func() (err error) {
			pushed, err = b.taskProduce(ctx, repo, pool, over, p)
			return err
		})
		err := g.Wait()
		return done.count(), pushedNote(pushed, b.scale.continuous), err
	})
	r.start, r.done = start, done
	return r, err
}

// taskProduce runs the scale's producers, pushing to taskrepo as p says
// until over is closed, and returns how many tasks they pushed.
func (b *bench) taskProduce(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, over <-chan struct{}, p pace) (int, error) {
	return produce(over, b.scale.producers, p, func(n int) error {
		cs := creations(0, n, uniqueIdentifier)
		if _, err := repo.Push(ctx, pool, topic, taskapi.Append, cs...); err != nil {
			return err
		}
		pushed, err := strconv.ParseInt(cs[0].Input, 10, 64)
		if err == nil {
			noteCommit(pushed)
		}
		return err
	})
}

// procContinuous runs taskrepo's producers and taskproc's Clients, started
// beforehand, for the scale's time; the Clients are stopped once the clock
// has stopped.
func (b *bench) procContinuous(ctx context.Context, pool *pgxpool.Pool, p pace) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	start, done := &latencies{}, &latencies{}
	run, err := newProcRun(pool, b.scale.proc, 0, start, done)
	if err != nil {
		return result{}, err
	}
	if err := run.start(ctx); err != nil {
		return result{}, errors.Join(err, run.stop())
	}
	r, err := measure(ctx, pool, func() (int, string, error) {
		over, release := closeAfter(b.scale.continuous)
		defer release()
		run.heard.recording.Store(true)
		pushed, err := b.taskProduce(ctx, repo, pool, over, p)
		run.heard.recording.Store(false)
		return done.count(), pushedNote(pushed, b.scale.continuous), errors.Join(err, run.heard.failure())
	})
	r.start, r.done = start, done
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
// t, for the scale's time.
func (b *bench) riverContinuous(ctx context.Context, pool *pgxpool.Pool, t riverTuning, p pace) (result, error) {
	if err := setupRiver(ctx, pool); err != nil {
		return result{}, err
	}
	start, done := &latencies{}, &latencies{}
	client, err := newRiverClient(pool, t, start)
	if err != nil {
		return result{}, err
	}
	events, cancel := completions(client)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	defer stopRiver(client)
	r, err := measure(ctx, pool, func() (int, string, error) {
		over, release := closeAfter(b.scale.continuous)
		defer release()
		var g errgroup.Group
		g.Go(func() error {
			for {
				select {
				case e := <-events:
					if pushed, ok := eventPushed(e.Job); ok {
						done.since(pushed, time.Now())
					}
				case <-over:
					return nil
				}
			}
		})
		var pushed int
		g.Go(func() (err error) {
			pushed, err = produce(over, b.scale.producers, p, func(n int) error {
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
			})
			return err
		})
		err := g.Wait()
		return done.count(), pushedNote(pushed, b.scale.continuous), err
	})
	r.start, r.done = start, done
	return r, err
}
