package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// contBatch is the batch of the producers in the continuous runs.
const contBatch = 100

// runContinuous measures producers and consumers at work together, flat out
// and paced, for a fixed time: completed tasks per second and the latency
// from push to start and to committed completion. taskrepo works with its
// own consumers and through taskproc, River tuned as river bench runs it and
// with its default fetch settings.
func runContinuous(ctx context.Context, b *bench) error {
	for _, rate := range []int{0, b.scale.pacedRate} {
		key, name, target := "flat", "continuous, flat out", 1.5
		if rate > 0 {
			key, name, target = "paced", fmt.Sprintf("continuous, paced at %s tasks/s", abbreviate(rate)), 0
		}
		scenario := "continuous_" + key
		task, err := b.side(ctx, scenario, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
			return b.taskContinuous(ctx, pool, rate)
		})
		if err != nil {
			return err
		}
		proc, err := b.side(ctx, scenario, "taskproc", func(pool *pgxpool.Pool) (result, error) {
			return b.procContinuous(ctx, pool, rate)
		})
		if err != nil {
			return err
		}
		rivers, err := b.riverSides(ctx, scenario, func(pool *pgxpool.Pool, t riverTuning) (result, error) {
			return b.riverContinuous(ctx, pool, t, rate)
		})
		if err != nil {
			return err
		}
		about := fmt.Sprintf("%d producers pushing batches of %d for %s", b.scale.producers, contBatch, b.scale.continuous)
		b.report.throughput(scenario, name+", completed", &task, rivers, 0,
			fmt.Sprintf("%s; taskrepo: %d consumers; %s", about, b.scale.consumers, rivers.note()))
		b.report.latency(scenario, name, &task, rivers)
		b.report.costs(scenario, name, &task, rivers)
		procName := strings.Replace(name, "continuous", "continuous through taskproc", 1)
		b.report.throughput(scenario+"_taskproc", procName+", completed", &proc, rivers, target,
			fmt.Sprintf("%s; taskproc: %s; %s", about, b.scale.proc, rivers.note()))
		b.report.latency(scenario+"_taskproc", procName, &proc, rivers)
		b.report.costs(scenario+"_taskproc", procName, &proc, rivers)
	}
	return nil
}

// produce runs the producers until over is closed, each pushing a batch with
// push as fast as it can, or, when rate > 0, at rate tasks/s in all. It
// returns how many tasks were pushed.
func produce(over <-chan struct{}, producers, rate int, push func() error) (int, error) {
	var (
		g      errgroup.Group
		pushed atomic.Int64
	)
	for range producers {
		g.Go(func() error {
			var tick <-chan time.Time
			if rate > 0 {
				t := time.NewTicker(time.Duration(producers*contBatch) * time.Second / time.Duration(rate))
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
				if err := push(); err != nil {
					return err
				}
				pushed.Add(contBatch)
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
func (b *bench) taskContinuous(ctx context.Context, pool *pgxpool.Pool, rate int) (result, error) {
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
			pushed, err = b.taskProduce(ctx, repo, pool, over, rate)
			return err
		})
		err := g.Wait()
		return done.count(), pushedNote(pushed, b.scale.continuous), err
	})
	r.start, r.done = start, done
	return r, err
}

// taskProduce runs the scale's producers, pushing to taskrepo at rate (0:
// flat out) until over is closed, and returns how many tasks they pushed.
func (b *bench) taskProduce(ctx context.Context, repo *taskpg.Repository, pool *pgxpool.Pool, over <-chan struct{}, rate int) (int, error) {
	return produce(over, b.scale.producers, rate, func() error {
		_, err := repo.Push(ctx, pool, topic, taskapi.Append, creations(0, contBatch, uniqueIdentifier)...)
		return err
	})
}

// procContinuous runs taskrepo's producers and taskproc's Clients, started
// beforehand, for the scale's time; the Clients are stopped once the clock
// has stopped.
func (b *bench) procContinuous(ctx context.Context, pool *pgxpool.Pool, rate int) (result, error) {
	repo, err := setupTaskrepo(ctx, pool)
	if err != nil {
		return result{}, err
	}
	start, done := &latencies{}, &latencies{}
	p, err := newProcRun(pool, b.scale.proc, 0, start, done)
	if err != nil {
		return result{}, err
	}
	if err := p.start(ctx); err != nil {
		return result{}, errors.Join(err, p.stop())
	}
	r, err := measure(ctx, pool, func() (int, string, error) {
		over, release := closeAfter(b.scale.continuous)
		defer release()
		p.heard.recording.Store(true)
		pushed, err := b.taskProduce(ctx, repo, pool, over, rate)
		p.heard.recording.Store(false)
		return done.count(), pushedNote(pushed, b.scale.continuous), errors.Join(err, p.heard.failure())
	})
	r.start, r.done = start, done
	return r, errors.Join(err, p.stop())
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
func (b *bench) riverContinuous(ctx context.Context, pool *pgxpool.Pool, t riverTuning, rate int) (result, error) {
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
			pushed, err = produce(over, b.scale.producers, rate, func() error {
				_, err := client.InsertManyFast(ctx, riverJobs(contBatch))
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
