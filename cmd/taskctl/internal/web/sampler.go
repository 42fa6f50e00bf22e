package web

import (
	"context"
	"log"
	"sync"
	"time"
)

// sampler reads the figures every interval (reading.go), keeps the last
// hour of them for the charts and the last reading for the pages. It
// counts tasks per state less often when that is slow (see loop), and
// completed tasks per minute and per hour, incrementally
// (sampler_done.go).
type sampler struct {
	store  Store
	every  time.Duration
	expiry time.Duration
	log    *log.Logger

	mu       sync.RWMutex
	last     reading
	tally    tally
	series   map[string][]point // per topic, the last hour
	overall  []point            // every topic: READY added up, the longest wait
	done     *completions       // the completions counted
	cues     map[string]health  // of the flagged topics (health.go)
	began    time.Time          // the first reading
	failure  error              // of the last reading, nil when it went well
	failedAt time.Time

	roster rosterRead // the last read of the roster (health.go); the sampler's goroutine's own

	poked  chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// countCost is how many times as long as a count per state took the
// sampler waits before the next: counts take at most a twentieth of the
// database's time.
const countCost = 20

func newSampler(store Store, every, expiry time.Duration, logger *log.Logger) *sampler {
	return &sampler{
		store: store, every: every, expiry: expiry, log: logger,
		series: map[string][]point{}, poked: make(chan struct{}, 1),
	}
}

// start takes the first reading and count, then goes on in goroutines of
// its own until stop: one reads every interval, the other counts the
// completions of the last day once (the backfill).
func (s *sampler) start(ctx context.Context) error {
	now := time.Now()
	s.done, s.began = newCompletions(settled(now)), now
	if err := s.read(ctx, now); err != nil {
		return err
	}
	if err := s.assess(ctx); err != nil {
		return err
	}
	if err := s.count(ctx); err != nil {
		return err
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.backfill(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.loop(ctx)
	}()
	return nil
}

// stop ends the sampler's goroutines and waits for them.
func (s *sampler) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// poke asks for a reading and a count at once (after an action).
func (s *sampler) poke() {
	select {
	case s.poked <- struct{}{}:
	default:
	}
}

// loop reads every interval, or twice as long as the last reading took
// if that is longer, so that the readings never keep the database busy
// more than a third of the time; and counts with a reading once countCost
// times as long as the last count took has gone by (at every reading on a
// small database, every half minute where a count takes 1.5 s).
func (s *sampler) loop(ctx context.Context) {
	for {
		last := s.snapshot()
		pause := max(s.every, 2*last.took)
		recount := false
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
			recount = time.Since(last.tally.at) >= max(s.every, countCost*last.tally.took)
		case <-s.poked:
			recount = true
		}
		err := s.read(ctx, time.Now())
		if err == nil {
			err = s.assess(ctx)
		}
		if err == nil && recount {
			err = s.count(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.fail(err)
		}
	}
}

// fail logs err and shows it on every page as the failure of the last
// reading, until a reading goes well.
func (s *sampler) fail(err error) {
	s.log.Printf("reading failed: %v", err)
	s.mu.Lock()
	s.failure, s.failedAt = err, time.Now()
	s.mu.Unlock()
}

// view is what a page reads of the sampler: the last reading and count,
// the series of every topic and the completions counted.
type view struct {
	reading
	tally    tally
	series   map[string][]point
	overall  []point
	done     *completions
	cues     map[string]health
	began    time.Time
	failure  error
	failedAt time.Time
}

// snapshot returns the sampler's state for a page; the maps are the
// sampler's own, never changed once made, and must not be changed.
func (s *sampler) snapshot() view {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return view{reading: s.last, tally: s.tally, series: s.series, overall: s.overall, done: s.done, cues: s.cues, began: s.began,
		failure: s.failure, failedAt: s.failedAt}
}

// perMinute adds up the completions per minute (Unix minute) of the
// topics given, every topic when none.
func (v view) perMinute(topics ...string) map[int64]int64 {
	total := map[int64]int64{}
	if v.done == nil {
		return total
	}
	for topic, minutes := range v.done.minutes {
		if len(topics) > 0 && topic != topics[0] {
			continue
		}
		for m, counts := range minutes {
			total[m] += counts.total()
		}
	}
	return total
}
