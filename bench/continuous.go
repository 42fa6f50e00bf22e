package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/taskapi"
)

// contBatch is the batch of the producers in the continuous runs.
const contBatch = 100

// runContinuous measures producers and consumers at work together, flat out
// and paced, for a fixed time: completed tasks per second and the latency
// from push to start and to committed completion.
func runContinuous(ctx context.Context, b *bench) error {
	for _, rate := range []int{0, b.scale.pacedRate} {
		key, name := "flat", "continuous, flat out"
		if rate > 0 {
			key, name = "paced", fmt.Sprintf("continuous, paced at %s tasks/s", abbreviate(rate))
		}
		task, err := b.side(ctx, "continuous_"+key, "taskrepo", func(pool *pgxpool.Pool) (result, error) {
			return b.taskContinuous(ctx, pool, rate)
		})
		if err != nil {
			return err
		}
		river, err := b.side(ctx, "continuous_"+key, "river", func(pool *pgxpool.Pool) (result, error) {
			return b.riverContinuous(ctx, pool, rate)
		})
		if err != nil {
			return err
		}
		b.report.throughput("continuous_"+key, name+", completed", &task, &river, 0,
			fmt.Sprintf("%d producers pushing batches of %d for %s; taskrepo: %d consumers; River: MaxWorkers %d",
				b.scale.producers, contBatch, b.scale.continuous, b.scale.consumers, b.scale.riverLatencyWorkers))
		b.report.latency("continuous_"+key, name, &task, &river)
		b.report.costs("continuous_"+key, name, &task, &river)
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
			pushed, err = produce(over, b.scale.producers, rate, func() error {
				_, err := repo.Push(ctx, pool, topic, taskapi.Append, creations(0, contBatch, uniqueIdentifier)...)
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

// riverContinuous runs River's producers and its started client for the
// scale's time.
func (b *bench) riverContinuous(ctx context.Context, pool *pgxpool.Pool, rate int) (result, error) {
	if err := setupRiver(ctx, pool); err != nil {
		return result{}, err
	}
	start, done := &latencies{}, &latencies{}
	client, err := newRiverClient(pool, b.scale.riverLatencyWorkers, start)
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
