package top

import (
	"context"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Config is what top reads and how often.
type Config struct {
	Interval time.Duration // between two readings, at least MinInterval
	Window   time.Duration // over which the rates are counted
	Within   time.Duration // an owner with a heartbeat this recent is alive
}

// MinInterval is the shortest interval between two readings.
const MinInterval = 100 * time.Millisecond

// Store is what top reads of the database, each call a transaction of
// its own (taskctl's store).
type Store interface {
	ops.Store
	Topics(ctx context.Context) ([]string, error)
	Activations(ctx context.Context) (map[string]taskapi.Activation, error)
	Results(ctx context.Context, from, to time.Time) (map[string]map[taskapi.Result]int64, error)
	Owners(ctx context.Context, within time.Duration) ([]string, error)
	Resolve(ctx context.Context, at time.Time, preceding bool) (int64, error)
	Shown() string // the database's URL without its password
}

// topSnapshot is one reading of the database: every topic and the live
// owners.
type topSnapshot struct {
	at     time.Time // when the reading began, on this machine's clock
	topics []topTopicReading
	owners []string
}

// topTopicReading is what top knows of one topic at one moment.
type topTopicReading struct {
	topic      string
	activation taskapi.Activation
	states     map[taskapi.State]int64 // tasks per state
	done       int64                   // tasks completed within the window
	pushed     int64                   // tasks created within the window, still stored
	wait       time.Duration           // how long the next task to start has waited
	waiting    bool                    // a READY task is due, so wait means something
}

// takeTopSnapshot reads every topic of s; now is the moment of the
// reading. Each read is a transaction of its own, so the figures of one
// reading may be a few milliseconds apart.
func takeTopSnapshot(ctx context.Context, s Store, cfg Config, now time.Time) (topSnapshot, error) {
	snap := topSnapshot{at: now}
	all, err := readTopTotals(ctx, s, now.Add(-cfg.Window))
	if err != nil {
		return snap, err
	}
	for _, topic := range all.topics {
		r, err := all.reading(ctx, s, topic, now)
		if err != nil {
			return snap, err
		}
		snap.topics = append(snap.topics, r)
	}
	if snap.owners, err = s.Owners(ctx, cfg.Within); err != nil {
		return snap, fmt.Errorf("list owners: %w", err)
	}
	return snap, nil
}

// topTotals are the figures of every topic that top reads in one call each.
type topTotals struct {
	topics      []string
	activations map[string]taskapi.Activation
	counts      map[string]map[taskapi.State]taskapi.Summary
	done        map[string]map[taskapi.Result]int64 // completed since the window began
	pushed      map[string]int64                    // created since the window began
}

// readTopTotals reads the figures of every topic; since is when the window
// of the rates began.
func readTopTotals(ctx context.Context, s Store, since time.Time) (t topTotals, err error) {
	if t.topics, err = s.Topics(ctx); err != nil {
		return t, fmt.Errorf("list topics: %w", err)
	}
	if t.activations, err = s.Activations(ctx); err != nil {
		return t, fmt.Errorf("read activations: %w", err)
	}
	if t.counts, err = s.Count(ctx, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded); err != nil {
		return t, fmt.Errorf("count tasks: %w", err)
	}
	if t.done, err = s.Results(ctx, since, time.Time{}); err != nil {
		return t, fmt.Errorf("count completed tasks: %w", err)
	}
	t.pushed, err = topPushedSince(ctx, s, since)
	return t, err
}

// reading is the line of one topic, with its wait read from s.
func (t topTotals) reading(ctx context.Context, s Store, topic string, now time.Time) (topTopicReading, error) {
	r := topTopicReading{
		topic: topic, activation: t.activations[topic],
		states: topStateCounts(t.counts[topic]), pushed: t.pushed[topic],
	}
	for _, n := range t.done[topic] {
		r.done += n
	}
	if r.states[taskapi.Ready] == 0 {
		return r, nil
	}
	w, err := ops.Waiting(ctx, s, topic, now)
	r.wait, r.waiting = w.Wait, w.Due
	return r, err
}

// topStateCounts turns Count's summaries of one topic into counts.
func topStateCounts(summaries map[taskapi.State]taskapi.Summary) map[taskapi.State]int64 {
	counts := make(map[taskapi.State]int64, len(summaries))
	for state, summary := range summaries {
		counts[state] = summary.Count
	}
	return counts
}

// topPushedSince counts, per topic, the tasks created at or after since that
// are still stored. Sequences grow with time across topics, so these are
// the tasks from the first sequence created at or after since on.
func topPushedSince(ctx context.Context, s Store, since time.Time) (map[string]int64, error) {
	first, err := s.Resolve(ctx, since, false)
	if err != nil {
		return nil, fmt.Errorf("find the tasks pushed since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	pushed := map[string]int64{}
	if first == taskapi.MaxSequence { // nothing created since
		return pushed, nil
	}
	counts, err := s.Count(ctx, taskapi.Total, taskapi.Counting{}, taskapi.Range{From: first, To: taskapi.MaxSequence})
	if err != nil {
		return nil, fmt.Errorf("count the tasks pushed since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	for topic, states := range counts {
		for _, summary := range states {
			pushed[topic] += summary.Count
		}
	}
	return pushed, nil
}
