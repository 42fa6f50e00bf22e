package web

import (
	"context"
	"fmt"
	"time"
)

// settle is how old a completion must be before the sampler counts it.
//
// A completion's time is that of its statement (on the database's clock),
// not of its commit: a transaction that completes tasks and commits a
// while later shows them with a time already past. A reading that counted
// up to its own time would miss them for good, as the next one counts on
// from there. So the readings count only up to settle before now (see
// settled), once every transaction that completed a task in that window
// has committed, unless it held on for longer than settle: a completion is
// counted once, and late commits are not missed. The other way, counting
// the last seconds again at every reading and keeping the later count,
// would show completions ten seconds sooner, but cost a second Results
// call per reading, and a call costs about the same whatever its window
// (at a thousand topics, half a second planning a thousand partitions),
// for figures per minute. settle also absorbs a skew of a few seconds
// between the clocks of this process and of the database.
const settle = 10 * time.Second

// settled is how far the completions can be counted at now: settle
// before it, to the second.
func settled(now time.Time) time.Time { return now.Add(-settle).Truncate(time.Second) }

// countDone counts the completions from where the readings stopped up to
// until, a piece at a time (one, or two across a minute; more after the
// database was out of reach).
func (s *sampler) countDone(ctx context.Context, until time.Time) error {
	for _, p := range pieces(s.snapshot().done.until, until) {
		if err := s.countPiece(ctx, p); err != nil {
			return fmt.Errorf("count completed tasks: %w", err)
		}
	}
	return nil
}

// countPiece counts the completions of p in the database and adds them.
func (s *sampler) countPiece(ctx context.Context, p piece) error {
	done, err := s.store.Results(ctx, p.from, p.to.Add(-time.Microsecond))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.done = s.done.with(p, done)
	s.mu.Unlock()
	return nil
}

// backfill counts, once, the completions of the day before the sampler
// started, newest first (the minutes of the last hour, then the hours), so
// that the charts have a past from the start, and a window of the last day
// is answered from memory once the backfill got back to its start. After
// each count it waits twice as long as the count took, as the readings do,
// so that it keeps the database busy a third of the time at most; a count
// that fails is tried again after a pause.
func (s *sampler) backfill(ctx context.Context) {
	start := s.snapshot().done.started
	todo := pieces(hourHorizonOf(start), start)
	for i := len(todo) - 1; i >= 0; {
		began := time.Now()
		err := s.countPiece(ctx, todo[i])
		pause := 2 * time.Since(began)
		switch {
		case err == nil:
			i--
		case ctx.Err() == nil:
			s.fail(fmt.Errorf("count the completions of the last day: %w", err))
			pause = max(pause, s.every)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}
