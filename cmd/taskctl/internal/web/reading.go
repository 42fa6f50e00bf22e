package web

import (
	"context"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// reading is one sample of the cheap figures of every topic: what the
// overview shows, and what pages read instead of the database where that
// keeps them fast.
type reading struct {
	at          time.Time
	took        time.Duration // the whole reading, the completions counted with it too
	topics      []string
	activations map[string]taskapi.Activation
	capacities  map[string]int64          // the topics that have a capacity
	limits      map[string]taskapi.Limits // the topics that have limits
	ready       map[string]int64          // READY tasks (the index of READY tasks)
	waits       map[string]ops.Wait       // the head of the READY tasks
	alive       []string                  // owners with a heartbeat within the expiry
}

// tally is the count of every topic's tasks per state: a count over whole
// topics, so taken less often than a reading.
type tally struct {
	at     time.Time
	took   time.Duration
	counts map[string]map[taskapi.State]int64
}

// point is one topic's figures at one reading, for the charts.
type point struct {
	at    time.Time
	ready int64
	wait  time.Duration
	due   bool
}

// read takes a reading at now, counts the completions that settled since
// the last one (countDone) and adds the reading to the series.
func (s *sampler) read(ctx context.Context, now time.Time) error {
	r, err := takeReading(ctx, s.store, now, s.expiry)
	if err == nil {
		err = s.countDone(ctx, settled(now))
	}
	if err != nil {
		return err
	}
	r.took = time.Since(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.failure = r, nil
	s.done = s.done.only(r.topics)
	s.addPoints(r)
	return nil
}

// takeReading reads the figures of every topic.
func takeReading(ctx context.Context, store Store, now time.Time, expiry time.Duration) (r reading, err error) {
	r.at = now
	if r.topics, err = store.Topics(ctx); err != nil {
		return r, fmt.Errorf("list topics: %w", err)
	}
	if r.activations, err = store.Activations(ctx); err != nil {
		return r, fmt.Errorf("read activations: %w", err)
	}
	if r.capacities, err = readyCapacities(ctx, store); err != nil {
		return r, fmt.Errorf("read capacities: %w", err)
	}
	if r.limits, err = store.Limits(ctx); err != nil {
		return r, fmt.Errorf("read limits: %w", err)
	}
	ready := taskapi.Counting{States: []taskapi.State{taskapi.Ready}}
	counts, err := store.Count(ctx, taskapi.Total, ready, taskapi.Unbounded)
	if err != nil {
		return r, fmt.Errorf("count READY tasks: %w", err)
	}
	r.ready = map[string]int64{}
	for _, topic := range r.topics {
		r.ready[topic] = counts[topic][taskapi.Ready].Count
	}
	if r.waits, err = readWaits(ctx, store, r.topics, r.ready, now); err != nil {
		return r, err
	}
	if r.alive, err = store.Owners(ctx, expiry); err != nil {
		return r, fmt.Errorf("list owners: %w", err)
	}
	return r, nil
}

// count counts every topic's tasks per state.
func (s *sampler) count(ctx context.Context) error {
	start := time.Now()
	counts, err := s.store.Count(ctx, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		return fmt.Errorf("count tasks: %w", err)
	}
	t := tally{at: start, took: time.Since(start), counts: map[string]map[taskapi.State]int64{}}
	for topic, states := range counts {
		t.counts[topic] = map[taskapi.State]int64{}
		for state, sum := range states {
			t.counts[topic][state] = sum.Count
		}
	}
	s.mu.Lock()
	s.tally = t
	s.mu.Unlock()
	return nil
}

// addPoints adds r to the series and drops what is older than the
// window, and the series of topics that are gone; s.mu is held. The map
// is replaced, never changed, and a series only grows at its end, so that
// a page may read what it took without a lock.
func (s *sampler) addPoints(r reading) {
	series := make(map[string][]point, len(r.topics))
	cut := r.at.Add(-window)
	for _, topic := range r.topics {
		w := r.waits[topic]
		points := append(s.series[topic], point{at: r.at, ready: r.ready[topic], wait: w.Wait, due: w.Due})
		series[topic] = trim(points, cut)
	}
	s.series = series
	s.overall = trim(append(s.overall, overall(r)), cut)
}

// trim drops the points before cut.
func trim(points []point, cut time.Time) []point {
	for len(points) > 0 && points[0].at.Before(cut) {
		points = points[1:]
	}
	return points
}

// overall is the point of every topic at r: the READY tasks added up, and
// the longest wait of a topic whose next task is due.
func overall(r reading) point {
	p := point{at: r.at}
	for _, topic := range r.topics {
		p.ready += r.ready[topic]
		if w := r.waits[topic]; w.Due && w.Wait >= p.wait {
			p.wait, p.due = w.Wait, true
		}
	}
	return p
}
