package taskproc

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Stats are the counts of a Manager since it was made.
type Stats struct {
	Polled    int64 // batches polled
	Tasks     int64 // tasks polled
	Completed int64 // tasks completed with the handler's decisions
	Failed    int64 // tasks failed with their batch
	Released  int64 // tasks given back unprocessed (interrupted)
	Abandoned int64 // tasks a fenced owner gave up without a write
	Lost      int64 // batches whose tasks another owner took before their settlement was written
	Cancelled int64 // tasks cancelled while they ran (taskapi.Canceller)
	Retried   int64 // settlement attempts that failed for the database and were tried again
	Rescued   int64 // expired tasks this process's keeper revived (WithRevival)
	Poisoned  int64 // expired tasks this process's keeper ended with Failure instead (WithRescues)
	InFlight  int   // batches polled and not settled yet
	// Runs is the distribution of the time batches took from their poll to
	// their settlement.
	Runs Distribution
}

// RunBounds are the upper bounds of the buckets of Stats.Runs.
var RunBounds = []time.Duration{
	time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 500 * time.Millisecond, time.Second, 5 * time.Second, 30 * time.Second,
}

// A Distribution counts durations in buckets: Counts[i] is how many were at
// most RunBounds[i] and above the bound before; the last count is of those
// above every bound. Sum is their total.
type Distribution struct {
	Counts []int64
	Sum    time.Duration
}

// counters are a Manager's Stats as they grow.
type counters struct {
	polledBatches, polledTasks, completed, failed, released, abandoned, lost, retried, rescued, poisoned, cancelled atomic.Int64
	runs                                                                                                            [10]atomic.Int64 // len(RunBounds) + 1
	runSum                                                                                                          atomic.Int64
}

func (c *counters) polled(tasks int) {
	c.polledBatches.Add(1)
	c.polledTasks.Add(int64(tasks))
}

func (c *counters) settled(e Event) {
	n := int64(len(e.Tasks))
	switch e.Kind {
	case EventCompleted:
		c.completed.Add(n)
	case EventFailed:
		c.failed.Add(n)
	case EventReleased:
		c.released.Add(n)
	case EventAbandoned:
		c.abandoned.Add(n)
	case EventLost:
		c.lost.Add(1)
	}
	bucket, _ := slices.BinarySearch(RunBounds, e.Duration)
	c.runs[bucket].Add(1)
	c.runSum.Add(int64(e.Duration))
}

// Stats returns the counts of the Manager.
func (m *Manager[Tx]) Stats() Stats {
	m.mu.Lock()
	inFlight := 0
	if m.run != nil {
		inFlight = len(m.run.batches)
	}
	m.mu.Unlock()
	c := &m.stats
	runs := Distribution{Counts: make([]int64, len(c.runs)), Sum: time.Duration(c.runSum.Load())}
	for i := range c.runs {
		runs.Counts[i] = c.runs[i].Load()
	}
	return Stats{
		Polled: c.polledBatches.Load(), Tasks: c.polledTasks.Load(), Completed: c.completed.Load(),
		Failed: c.failed.Load(), Released: c.released.Load(), Abandoned: c.abandoned.Load(), Lost: c.lost.Load(), Cancelled: c.cancelled.Load(),
		Retried: c.retried.Load(), Rescued: c.rescued.Load(), Poisoned: c.poisoned.Load(), InFlight: inFlight, Runs: runs,
	}
}

// A Gauge is what waits in a topic.
type Gauge struct {
	Ready       int64     // tasks Ready
	OldestReady time.Time // when the oldest Ready task was created; zero when none
}

// Gauge reads what waits in the Manager's topic: the number of Ready tasks
// (counted on the index of Ready tasks, never over the whole table) and the
// creation time of the oldest, in a transaction of its own.
func (m *Manager[Tx]) Gauge(ctx context.Context) (Gauge, error) {
	repo := m.repository()
	ready := []taskapi.State{taskapi.Ready}
	var g Gauge
	err := m.transact(ctx, func(tx Tx) error {
		counts, err := repo.Count(ctx, tx, taskapi.Total, taskapi.Counting{Topic: m.topic, States: ready}, taskapi.Unbounded)
		if err != nil {
			return err
		}
		g.Ready = counts[m.topic][taskapi.Ready].Count
		oldest, err := repo.Page(ctx, tx, m.topic, taskapi.Listing{States: ready}, taskapi.Inception, 1, taskapi.Forward)
		if err == nil && len(oldest) == 1 {
			g.OldestReady = oldest[0].Created
		}
		return err
	})
	return g, err
}
