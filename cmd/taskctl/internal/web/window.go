package web

import (
	"fmt"
	"time"
)

// answer is the completions of a window, answered from the sampler's
// memory.
type answer struct {
	from, to time.Time // the window counted: the one asked, rounded to buckets
	byHour   bool      // from was rounded to a whole hour, not a minute
	present  bool      // the window reaches the present: to is where the sampler has counted up to
	counts   map[string]byResult
}

// window answers the window [from, to] from memory: from rounded to the
// nearest whole minute within the last hour (the minutes kept) and to the
// nearest whole hour before; to likewise, or, when it lies at or after
// c.until, c.until itself (completions are counted once they settled, see
// settle). When memory does not hold the window, why says so, for a page
// that then counts it in the database: from is zero (unbounded), or before
// what the sampler has counted (beyond the horizon, or before the backfill
// got there), or the rounded window is empty or needs minutes that are no
// longer kept.
func (c *completions) window(from, to time.Time) (a answer, why string) {
	if c == nil || from.IsZero() {
		return a, "the window has no start"
	}
	minutes := later(c.from, minuteHorizonOf(c.until))
	a.from, a.byHour = roundTo(from, minutes), from.Before(minutes)
	a.to = earliest(roundTo(to, minutes), c.until)
	if !to.Before(c.until) || a.to.Equal(c.until) {
		a.to, a.present = c.until, true
	}
	switch {
	case a.from.Before(hourHorizonOf(c.until)):
		return a, "it begins before the last 24 hours, which the dashboard keeps in memory"
	case a.from.Before(c.from):
		return a, fmt.Sprintf("the dashboard is still counting the last 24 hours in the database, and got back to %s", stamp(c.from))
	}
	hours, mins, ok := c.walk(a.from, a.to, minutes)
	if !ok || !a.to.After(a.from) {
		return a, "it does not round to the dashboard's whole minutes (the last hour) and hours (before): it is too short, or it needs minutes from before the last hour"
	}
	a.counts = c.sum(hours, mins)
	return a, ""
}

// roundTo rounds t to the nearest whole minute at or after minutes, where
// minutes are kept, and to the nearest whole hour before.
func roundTo(t, minutes time.Time) time.Time {
	if t.Before(minutes) {
		return t.Round(time.Hour)
	}
	return t.Round(time.Minute)
}

// walk finds the buckets that make up [a, b): whole hours while they fit,
// the hour under way when b is c.until (its bucket holds what was counted
// of it), and minutes otherwise, which must lie at or after minutes. a and
// b are whole minutes, or b is c.until. ok is false when the window needs
// a minute that is not kept.
func (c *completions) walk(a, b, minutes time.Time) (hours, mins []int64, ok bool) {
	for t := a; t.Before(b); {
		whole := t.Truncate(time.Hour).Equal(t)
		current := b.Equal(c.until) && t.Equal(b.Truncate(time.Hour))
		switch {
		case whole && (!t.Add(time.Hour).After(b) || current):
			hours = append(hours, bucketOf(t, time.Hour))
			t = earliest(t.Add(time.Hour), b)
		case !t.Before(minutes):
			mins = append(mins, bucketOf(t, time.Minute))
			t = earliest(t.Truncate(time.Minute).Add(time.Minute), b)
		default:
			return nil, nil, false
		}
	}
	return hours, mins, true
}

// sum adds up, per topic, the counts of the hours and the minutes given.
func (c *completions) sum(hours, mins []int64) map[string]byResult {
	out := map[string]byResult{}
	add := func(b buckets, keys []int64) {
		for topic, inner := range b {
			for _, k := range keys {
				if n, ok := inner[k]; ok {
					out[topic] = out[topic].add(n)
				}
			}
		}
	}
	add(c.hours, hours)
	add(c.minutes, mins)
	return out
}
