package web

import (
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// allStates are the states in their order, the columns of the counts.
var allStates = ops.AllStates()

// topicsPerPage is how many topics the overview lists at once.
const topicsPerPage = 100

// topicLine is one topic in the overview.
type topicLine struct {
	Topic, Link string
	Activation  taskapi.Activation
	Capacity    int64 // 0: none
	Limits      taskapi.Limits
	Counts      []int64 // per state of allStates, from the last count
	Ready       int64   // from the last reading
	Oldest      time.Time
	Wait        time.Duration
	Due         bool
	Done        int64  // completed within the last hour
	Health      health // the cues raised (health.go)
}

// attention is a flagged topic in the overview's summary.
type attention struct {
	Topic, Link string
	Health      health
}

// attentionListed is how many flagged topics the overview names at most.
const attentionListed = 10

// figures is the part of the overview that refreshes itself.
type figures struct {
	At, CountedAt     time.Time
	Took, CountTook   time.Duration
	States            []taskapi.State
	Totals            []int64
	Topics            []topicLine
	From, To, Matched int // the topics shown (From to To of Matched)
	All               int
	Prev, Next        string
	Alive             int
	Attention         []attention   // the flagged topics, of every page, attentionListed at most
	Flagged           int           // the flagged topics in all
	AttentionMore     int           // flagged beyond those listed
	Throughput        template.HTML `json:"-"` // drawings: the JSON API leaves them out
	Wait              template.HTML `json:"-"`
	Ready             template.HTML `json:"-"`
}

// overviewData is the overview page.
type overviewData struct {
	Figures   figures
	Query     string // the filter of topic names
	Live      string // the fragment that refreshes the figures
	RefreshMS int64
	Reload    string
}

// overview shows every topic from the sampler's last reading.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	f, q, err := s.figures(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	live := url.Values{}
	if q.query != "" {
		live.Set("q", q.query)
	}
	if q.skip > 0 {
		live.Set("skip", strconv.Itoa(q.skip))
	}
	s.render(w, r, http.StatusOK, "overview", frame{Title: "Topics", Nav: "topics", Data: overviewData{
		Figures: f, Query: q.query, Live: link("/live", live), RefreshMS: s.cfg.Refresh.Milliseconds(), Reload: link("/", live),
	}})
}

// live serves the figures of the overview alone, for its script to put in
// place every refresh.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	f, _, err := s.figures(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("X-Taskctl-Fragment", "figures")
	s.write(w, http.StatusOK, "overview", "figures", f)
}

// overviewQuery is the filter and place of the overview's list.
type overviewQuery struct {
	query string
	skip  int
}

// figures draws the overview's figures from the sampler's last reading.
func (s *Server) figures(r *http.Request) (figures, overviewQuery, error) {
	f := form(r.URL.Query())
	q := overviewQuery{query: f.text("q")}
	var err error
	if q.skip, err = f.number("skip", 0, 0, 1<<30); err != nil {
		return figures{}, q, err
	}
	v := s.sampler.snapshot()
	out := figures{
		At: v.at, Took: v.took, CountedAt: v.tally.at, CountTook: v.tally.took, States: allStates,
		Totals: make([]int64, len(allStates)), All: len(v.topics), Alive: len(v.alive),
	}
	matched := slices.DeleteFunc(slices.Clone(v.topics), func(t string) bool { return !strings.Contains(t, q.query) })
	slices.SortFunc(matched, byName)
	out.Matched = len(matched)
	for _, topic := range v.topics {
		for i, state := range allStates {
			out.Totals[i] += v.tally.counts[topic][state]
		}
	}
	page := matched[min(q.skip, len(matched)):min(q.skip+topicsPerPage, len(matched))]
	out.From, out.To = min(q.skip+1, len(matched)), min(q.skip+topicsPerPage, len(matched))
	for _, topic := range page {
		out.Topics = append(out.Topics, lineOf(v, topic))
	}
	out.Attention, out.AttentionMore = attentionOf(v)
	out.Flagged = len(v.cues)
	out.Prev, out.Next = overviewLinks(q, len(matched))
	out.Throughput, out.Wait, out.Ready = overviewCharts(v)
	return out, q, nil
}

// lineOf is the line of topic in the overview.
func lineOf(v view, topic string) topicLine {
	w := v.waits[topic]
	l := topicLine{
		Topic: topic, Link: topicLink(topic), Activation: v.activations[topic], Capacity: v.capacities[topic], Limits: v.limits[topic],
		Ready: v.ready[topic], Oldest: w.Oldest, Wait: w.Wait, Due: w.Due,
		Counts: make([]int64, len(allStates)), Health: v.cues[topic],
	}
	for i, state := range allStates {
		l.Counts[i] = v.tally.counts[topic][state]
	}
	for _, n := range v.perMinute(topic) {
		l.Done += n
	}
	return l
}

// attentionOf lists the flagged topics of v by name, attentionListed at
// most, and how many more there are.
func attentionOf(v view) (listed []attention, more int) {
	topics := slices.SortedFunc(maps.Keys(v.cues), byName)
	for _, topic := range topics[:min(len(topics), attentionListed)] {
		listed = append(listed, attention{Topic: topic, Link: topicLink(topic), Health: v.cues[topic]})
	}
	return listed, len(topics) - len(listed)
}

// overviewLinks are the links to the pages of topics before and after this one.
func overviewLinks(q overviewQuery, matched int) (prev, next string) {
	at := func(skip int) string {
		v := url.Values{}
		if q.query != "" {
			v.Set("q", q.query)
		}
		if skip > 0 {
			v.Set("skip", strconv.Itoa(skip))
		}
		return link("/", v)
	}
	if q.skip > 0 {
		prev = at(max(q.skip-topicsPerPage, 0))
	}
	if q.skip+topicsPerPage < matched {
		next = at(q.skip + topicsPerPage)
	}
	return prev, next
}

// overviewCharts draws the throughput of every topic per minute, the
// longest WAIT of any topic and the READY tasks of all, over the last hour.
func overviewCharts(v view) (throughput, wait, ready template.HTML) {
	waits, readies := curves(v.overall)
	return barChart("Completed per minute, every topic", v.perMinute(), v.at),
		lineChart("WAIT, the longest of any topic (push→start latency of the next task)", waits, v.at, durationLabel, waitPast(v.overall, v.began, v.at)),
		lineChart("READY tasks, every topic", readies, v.at, countLabel, readyPast(v.began))
}

// curves turns points into the samples of the wait and READY charts.
func curves(points []point) (waits, readies []sample) {
	for _, p := range points {
		if p.due {
			waits = append(waits, sample{p.at, float64(p.wait)})
		} else {
			waits = append(waits, sample{p.at, 0})
		}
		readies = append(readies, sample{p.at, float64(p.ready)})
	}
	return waits, readies
}
