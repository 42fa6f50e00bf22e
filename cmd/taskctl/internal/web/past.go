package web

import (
	"fmt"
	"time"
)

// The charts of READY and WAIT are drawn from the sampler's readings, in
// memory, so a dashboard that starts has none of the hour before. The
// completions per minute are counted again in the database at start (the
// backfill, sampler_done.go), so their chart survives a restart. READY and
// WAIT cannot be read back: the database records when a task was created,
// became due and was completed, not when it was polled or left READY
// otherwise, nor any past count. What can be derived is drawn dashed, and
// each chart marks the dashboard's first reading with a note that says
// what it knows of the time before.

// clock writes t as a time of day in UTC, for the notes.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") + " UTC" }

// waitPast is what the WAIT chart of points knows of the time before
// began, the first reading, over the window ending at end: WAIT as it was
// if the task waiting at the first reading was the next one all along
// since it became due, which it is while nothing takes it.
func waitPast(points []point, began, end time.Time) past {
	p := past{began: began, note: fmt.Sprintf("The dashboard started at %s; WAIT before then cannot be read back: "+
		"the database records no start times.", clock(began))}
	if len(points) == 0 || !points[0].at.Equal(began) || !points[0].due || points[0].wait <= 0 {
		return p
	}
	first := points[0]
	due := first.at.Add(-first.wait)
	from := later(due, end.Add(-window))
	p.derived = []sample{{from, float64(from.Sub(due))}, {first.at, float64(first.wait)}}
	p.note = fmt.Sprintf("The dashboard started at %s. Before, the dashed line is WAIT as it was if the task waiting then "+
		"was the next one all along: it had been due since %s. The database records no start times, so WAIT before "+
		"the start cannot be read back exactly.", clock(began), clock(due))
	return p
}

// readyPast is what the READY chart knows of the time before began:
// nothing.
func readyPast(began time.Time) past {
	return past{began: began, note: fmt.Sprintf("The dashboard started at %s; READY before then cannot be read back: "+
		"the database does not record when a task left READY (a poll keeps no time), only when it was created and completed.",
		clock(began))}
}
