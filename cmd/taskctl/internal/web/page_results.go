package web

import (
	"html/template"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// results are the results in their order, the columns of the table.
var results = []taskapi.Result{taskapi.Success, taskapi.Filter, taskapi.Suspension, taskapi.Failure}

// resultLine is one topic on the results page.
type resultLine struct {
	Topic, Link string
	Counts      []int64 // per result of results
	Total       int64
	PerSecond   float64
}

// resultsData is the results page.
type resultsData struct {
	Since, Until string // as given; Since is 1h when neither is
	From, To     time.Time
	Results      []taskapi.Result
	Lines        []resultLine
	Totals       []int64
	Total        int64
	PerSecond    float64
	Chart        template.HTML
	Memory       *memoryNote // how the window was answered from memory; nil when the database counted it
	Slow         string      // why the database counts it
	Counting     time.Time   // when the database began to count the window, while it counts
	Busy         bool        // the database counts other windows: this one waits
}

// memoryNote says how the dashboard answered a window from its memory.
type memoryNote struct {
	ByHour     bool          // the start was rounded to a whole hour (minutes within the last hour)
	Present    bool          // the window ends where the dashboard has counted up to
	Settle     time.Duration // how old a completion is before the dashboard counts it
	Started    time.Time     // where the dashboard's own counting began
	Backfilled bool          // part of the window was counted in the database at start
}

// resultsPage shows the tasks completed within a window (since, until;
// the last hour when neither is given) per topic and result. A window
// within the sampler's memory (the last day) is answered from its counts
// per minute and per hour, rounded to them; another is counted in the
// database, on the index of completion times of every topic, in the
// background: the page says so and reloads itself until the count is
// there.
func (s *Server) resultsPage(w http.ResponseWriter, r *http.Request) {
	f, now := form(r.URL.Query()), time.Now()
	d := resultsData{Since: f.text("since"), Until: f.text("until"), Results: results, Totals: make([]int64, len(results))}
	if d.Since == "" && d.Until == "" {
		d.Since = "1h"
	}
	from, to, err := resultsWindow(d.Since, d.Until, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := s.sampler.snapshot()
	done, err := s.resultsOf(v.done, from, to, &d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.fill(done)
	d.Chart = barChart("Completed per minute over the last hour, every topic", v.perMinute(), v.at)
	page := frame{Title: "Results", Nav: "results", Data: d}
	if d.Busy || !d.Counting.IsZero() {
		page.Reload = time.Second
	}
	s.render(w, r, http.StatusOK, "results", page)
}

// resultsWindow reads the window of the results page: since and until, a
// time or a duration ago each; until is now when not given.
func resultsWindow(since, until string, now time.Time) (from, to time.Time, err error) {
	f := form{"since": {since}, "until": {until}}
	if from, err = f.when("since", now); err != nil {
		return from, to, err
	}
	if to, err = f.when("until", now); err != nil {
		return from, to, err
	}
	if to.IsZero() {
		to = now
	}
	if from.After(to) {
		return from, to, badRequest("since (%s) is after until (%s)", stamp(from), stamp(to))
	}
	return from, to, nil
}

// resultsOf answers the window [from, to] from memory where it holds it,
// else from its count in the database (see counting.go), and says which in
// d. It returns no counts while the database counts.
func (s *Server) resultsOf(memory *completions, from, to time.Time, d *resultsData) (map[string]byResult, error) {
	a, why := memory.window(from, to)
	if why == "" {
		d.From, d.To = a.from, a.to
		d.Memory = &memoryNote{ByHour: a.byHour, Present: a.present, Settle: settle,
			Started: memory.started, Backfilled: a.from.Before(memory.started)}
		return a.counts, nil
	}
	d.From, d.To, d.Slow = from, to, why
	n, ok := s.counts.count(d.Since+"|"+d.Until, from, to)
	switch {
	case !ok:
		d.Busy = true
	case n.ended.IsZero():
		d.Counting = n.started
	default:
		d.From, d.To = n.from, n.to
	}
	return n.done, n.err
}

// fill writes the lines and totals of done, per topic in order.
func (d *resultsData) fill(done map[string]byResult) {
	seconds := max(d.To.Sub(d.From).Seconds(), 1)
	for _, topic := range slices.Sorted(maps.Keys(done)) {
		line := resultLine{Topic: topic, Link: topicLink(topic), Counts: make([]int64, len(results))}
		for i, res := range results {
			line.Counts[i] = done[topic][res]
			line.Total += line.Counts[i]
			d.Totals[i] += line.Counts[i]
		}
		line.PerSecond = float64(line.Total) / seconds
		d.Total += line.Total
		d.Lines = append(d.Lines, line)
	}
	d.PerSecond = float64(d.Total) / seconds
}
