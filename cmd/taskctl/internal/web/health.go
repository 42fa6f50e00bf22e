package web

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The health cues flag the topics an on-call operator should look at:
//
//   - No live consumer: a RUNNING topic whose next READY task has been due
//     for longer than the expiry, of which no owner alive (a heartbeat
//     within the expiry) holds an ACTIVE task, and of which nothing was
//     completed in the minutes of that span. A live consumer polls every
//     second or so when idle (taskproc's pause), so due work left that
//     long, neither held nor completed, has nobody taking it.
//   - WAIT keeps growing: over the last growSpan, the next READY task of
//     a RUNNING topic was due at every reading, and WAIT grew by at least
//     half of the time that passed: its head does not move (a consumer
//     stuck, or holding its tasks forever), or its consumers fall behind.
//
// Paused and draining topics claim nothing by design, so they are never
// flagged: their activation is shown instead. The database records which
// owner holds which ACTIVE tasks (Roster), not which owner polled what
// when, so the sampler reads the roster only while a topic looks idle by
// the cheap figures (stalled), after the reading, and keeps the cues of
// the flagged topics for the pages (assess).

// growSpan is how long WAIT must keep growing before it is flagged.
const growSpan = 3 * time.Minute

// health is what the cues say of one topic.
type health struct {
	NoConsumer bool
	Growing    bool
	Wait       time.Duration // WAIT at the reading
	GrewFrom   time.Duration // WAIT growSpan before, when Growing
	Quiet      time.Duration // how long due work went untaken, for NoConsumer: the expiry
}

// Flagged says whether a cue is raised.
func (h health) Flagged() bool { return h.NoConsumer || h.Growing }

// ConsumerText says why a topic has no live consumer.
func (h health) ConsumerText() string {
	return fmt.Sprintf("Its READY tasks are due and the next one has waited %s, yet no owner alive holds any of its tasks "+
		"and none was completed in the last %s: is a consumer of this topic running?", dur(h.Wait), dur(h.Quiet))
}

// GrowingText says how WAIT grew.
func (h health) GrowingText() string {
	return fmt.Sprintf("WAIT grew from %s to %s over the last %s: the next task does not move, or the consumers fall behind.",
		dur(h.GrewFrom), dur(h.Wait), dur(growSpan))
}

// Short names the cues raised, for a list.
func (h health) Short() string {
	switch {
	case h.NoConsumer && h.Growing:
		return "no live consumer, WAIT growing"
	case h.NoConsumer:
		return "no live consumer"
	}
	return "WAIT growing"
}

// stalled says whether topic looks unconsumed at v by the sampler's cheap
// figures: RUNNING, its next READY task due for at least quiet, and no
// completion counted in the minutes of the last quiet.
func stalled(v view, topic string, quiet time.Duration) bool {
	w := v.waits[topic]
	if v.activations[topic] != taskapi.Running || !w.Due || w.Wait < quiet || v.done == nil {
		return false
	}
	first := bucketOf(v.done.until.Add(-quiet), time.Minute)
	for m, counts := range v.done.minutes[topic] {
		if m >= first && counts.total() > 0 {
			return false
		}
	}
	return true
}

// rosterRead is the sampler's last read of the roster: the topics that an
// owner alive then held ACTIVE tasks of. Only the sampler's goroutine
// touches it.
type rosterRead struct {
	at   time.Time
	took time.Duration
	held map[string]bool
}

// assess raises the cues of every topic at the last reading, and keeps
// those of the flagged topics for the pages. While a topic looks stalled
// it reads the roster, for the owners alive that hold its tasks: at once
// the first time, then once countCost times as long as the last read took
// has passed (a read of the roster over a thousand topics held takes a
// quarter of a second), so that it keeps the database busy a twentieth of
// the time at most; a topic is flagged only by a read of the roster.
func (s *sampler) assess(ctx context.Context) error {
	v := s.snapshot()
	var idle []string
	for _, topic := range v.topics {
		if stalled(v, topic, s.expiry) {
			idle = append(idle, topic)
		}
	}
	if len(idle) > 0 && time.Since(s.roster.at) >= max(s.every, countCost*s.roster.took) {
		if err := s.readRoster(ctx, v); err != nil {
			return err
		}
	}
	cues := map[string]health{}
	for _, topic := range v.topics {
		h := health{Wait: v.waits[topic].Wait, Quiet: s.expiry}
		h.NoConsumer = !s.roster.at.IsZero() && slices.Contains(idle, topic) && !s.roster.held[topic]
		if v.activations[topic] == taskapi.Running {
			h.GrewFrom, h.Growing = growing(v.series[topic])
		}
		if h.Flagged() {
			cues[topic] = h
		}
	}
	s.mu.Lock()
	s.cues = cues
	s.mu.Unlock()
	return nil
}

// readRoster reads which topics an owner alive at v holds ACTIVE tasks of.
func (s *sampler) readRoster(ctx context.Context, v view) error {
	start := time.Now()
	roster, err := s.store.Roster(ctx)
	if err != nil {
		return fmt.Errorf("read the roster of owners: %w", err)
	}
	held := map[string]bool{}
	for _, o := range roster {
		if !slices.Contains(v.alive, o.Owner) {
			continue
		}
		for topic, n := range o.Held {
			held[topic] = held[topic] || n > 0
		}
	}
	s.roster = rosterRead{at: start, took: time.Since(start), held: held}
	return nil
}

// growing says whether WAIT kept growing over the last growSpan of
// points: due at every one of them, and grown by at least half the time
// between the first and the last; from is WAIT at the first.
func growing(points []point) (from time.Duration, ok bool) {
	if len(points) < 2 {
		return 0, false
	}
	last := points[len(points)-1]
	// The first point within growSpan of the last; the one before it starts the span.
	i, _ := slices.BinarySearchFunc(points, last.at.Add(-growSpan), func(p point, t time.Time) int { return p.at.Compare(t) })
	if i < len(points) && points[i].at.Equal(last.at.Add(-growSpan)) {
		i++
	}
	if i == 0 {
		return 0, false // the series does not reach back growSpan yet
	}
	span := points[i-1:]
	for _, p := range span {
		if !p.due {
			return 0, false
		}
	}
	first := span[0]
	return first.wait, last.wait-first.wait >= last.at.Sub(first.at)/2
}
