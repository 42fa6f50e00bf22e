package web

import (
	"maps"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The sampler remembers the completed tasks of every topic per result, per
// minute for the last hour and per hour for the last day, so that the
// results of a window within that horizon come from memory (see window)
// instead of a count in the database, which reads the completions of every
// topic. It counts them in pieces (see pieces), each within one minute or
// one hour, with Results: once at start going back a day (the backfill),
// then at every reading from where it stopped.
const (
	minuteHorizon = time.Hour      // minutes are kept this far back
	hourHorizon   = 24 * time.Hour // hours are kept this far back
)

// byResult counts completions by result (indexed by taskapi.Result).
type byResult [4]int64

// total adds up the counts.
func (c byResult) total() int64 { return c[0] + c[1] + c[2] + c[3] }

// add returns the sum of c and d.
func (c byResult) add(d byResult) byResult {
	for i := range c {
		c[i] += d[i]
	}
	return c
}

// countsOf turns the counts of Results into byResult per topic, leaving
// out the topics without any.
func countsOf(done map[string]map[taskapi.Result]int64) map[string]byResult {
	out := make(map[string]byResult, len(done))
	for topic, results := range done {
		var c byResult
		for res, k := range results {
			c[res] += k
		}
		if c.total() > 0 {
			out[topic] = c
		}
	}
	return out
}

// bucketOf names the bucket of size span (a minute or an hour) that holds
// t: its start in Unix minutes or Unix hours.
func bucketOf(t time.Time, span time.Duration) int64 {
	return t.Unix() / int64(span/time.Second)
}

// buckets counts completions per topic and bucket.
type buckets map[string]map[int64]byResult

// with returns b with counts added to bucket; b is left as it was.
func (b buckets) with(counts map[string]byResult, bucket int64) buckets {
	next := maps.Clone(b)
	if next == nil {
		next = buckets{}
	}
	for topic, c := range counts {
		inner := maps.Clone(next[topic])
		if inner == nil {
			inner = map[int64]byResult{}
		}
		inner[bucket] = inner[bucket].add(c)
		next[topic] = inner
	}
	return next
}

// since returns b without the buckets before first, and without the
// topics that keep is false for; b is left as it was, and returned itself
// when nothing goes.
func (b buckets) since(first int64, keep func(topic string) bool) buckets {
	stale := func(topic string, inner map[int64]byResult) bool {
		if !keep(topic) {
			return true
		}
		for k := range inner {
			if k < first {
				return true
			}
		}
		return false
	}
	var next buckets
	for topic, inner := range b {
		if !stale(topic, inner) {
			continue
		}
		if next == nil {
			next = maps.Clone(b)
		}
		if !keep(topic) {
			delete(next, topic)
			continue
		}
		next[topic] = maps.Clone(inner)
		maps.DeleteFunc(next[topic], func(k int64, _ byResult) bool { return k < first })
	}
	if next == nil {
		return b
	}
	return next
}

// completions is what the sampler has counted of the completed tasks:
// every completion within [from, until), per topic and result, per minute
// back to the minute horizon of until and per hour back to its hour
// horizon. A value is never changed once made: every change makes a new
// one, sharing what did not change, so that pages read it without a lock.
type completions struct {
	minutes, hours buckets
	from, until    time.Time
	started        time.Time // the readings count from here on, the backfill before it
}

// newCompletions starts counting at start, with nothing counted yet.
func newCompletions(start time.Time) *completions {
	return &completions{from: start, until: start, started: start}
}

// minuteHorizonOf is where the minutes kept at t begin.
func minuteHorizonOf(t time.Time) time.Time { return t.Truncate(time.Minute).Add(-minuteHorizon) }

// hourHorizonOf is where the hours kept at t begin.
func hourHorizonOf(t time.Time) time.Time { return t.Truncate(time.Hour).Add(-hourHorizon) }

// piece is a span of time [from, to) counted with one call of Results:
// within one minute when minute is set, within one hour otherwise.
type piece struct {
	from, to time.Time
	minute   bool
}

// pieces cuts [from, to) into pieces, in order: minutes from the minute
// horizon of to on, hours before it, nothing before its hour horizon.
func pieces(from, to time.Time) []piece {
	minutes, hours := minuteHorizonOf(to), hourHorizonOf(to)
	var out []piece
	for t := later(from, hours); t.Before(to); {
		p := piece{from: t, minute: !t.Before(minutes)}
		if p.minute {
			p.to = earliest(t.Truncate(time.Minute).Add(time.Minute), to)
		} else {
			p.to = earliest(t.Truncate(time.Hour).Add(time.Hour), minutes, to)
		}
		out = append(out, p)
		t = p.to
	}
	return out
}

// with returns c with the completions counted in p added: to the minute of
// a minute piece, and to the hour of every piece. p adjoins what c counted:
// it ends where c begins (the backfill, going back) or begins where c ends
// (the readings); or it begins after c ends, when the readings could not
// count for longer than the horizon, and c then counts afresh from p.
// Buckets beyond the horizons go.
func (c *completions) with(p piece, done map[string]map[taskapi.Result]int64) *completions {
	next := *c
	counts := countsOf(done)
	if p.minute {
		next.minutes = c.minutes.with(counts, bucketOf(p.from, time.Minute))
	}
	next.hours = c.hours.with(counts, bucketOf(p.from, time.Hour))
	switch {
	case p.to.Equal(c.from):
		next.from = p.from
	case p.from.Equal(c.until):
		next.until = p.to
	case p.from.After(c.until):
		next.from, next.until = p.from, p.to
	}
	return next.trimmed(func(string) bool { return true })
}

// only returns c without the topics that are not in topics (sorted).
func (c *completions) only(topics []string) *completions {
	return c.trimmed(func(topic string) bool {
		_, ok := slices.BinarySearch(topics, topic)
		return ok
	})
}

// trimmed returns c without the buckets beyond the horizons of c.until,
// and without the topics that keep is false for.
func (c *completions) trimmed(keep func(topic string) bool) *completions {
	next := *c
	next.minutes = c.minutes.since(bucketOf(minuteHorizonOf(c.until), time.Minute), keep)
	next.hours = c.hours.since(bucketOf(hourHorizonOf(c.until), time.Hour), keep)
	next.from = later(c.from, hourHorizonOf(c.until))
	return &next
}

// later returns the latest of times.
func later(t time.Time, times ...time.Time) time.Time {
	for _, u := range times {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// earliest returns the earliest of times.
func earliest(t time.Time, times ...time.Time) time.Time {
	for _, u := range times {
		if u.Before(t) {
			t = u
		}
	}
	return t
}
