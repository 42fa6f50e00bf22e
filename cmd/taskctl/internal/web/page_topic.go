package web

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// pageSize is how many tasks a topic's page lists unless told, and
// maxPageSize the most it lists.
const (
	pageSize    = 50
	maxPageSize = 1000
)

// taskRow is one task in a table.
type taskRow struct {
	Topic string
	Info  taskapi.Info
	Link  string
}

// rowsOf makes rows of the tasks of topic.
func rowsOf(topic string, infos []taskapi.Info) []taskRow {
	rows := make([]taskRow, len(infos))
	for i, info := range infos {
		rows[i] = taskRow{Topic: topic, Info: info, Link: taskLink(topic, info.Sequence)}
	}
	return rows
}

// listQuery is what a topic's page lists: the filters, and where the page
// starts.
type listQuery struct {
	topic                 string
	states                []taskapi.State
	identifier, reference string
	since, until          time.Time // the window of creation times; zero: open
	sinceText, untilText  string    // as given
	after, before         int64     // a cursor: after going forward, before going backward
	last                  bool      // the last page in the order shown: the oldest tasks, or the newest with oldest
	oldest                bool      // oldest first (order=oldest); newest first by default
	limit                 int
}

// The orders of a topic's page (order=): by sequence, the one order that
// an index serves on every backend with any filter.
const (
	orderNewest = "newest"
	orderOldest = "oldest"
)

// filtered reports whether q filters by state or by a window of creation
// times: the reads that wait at the gate of such pages (gate.go).
// Identifiers and references are found by index probes of their own.
func (q listQuery) filtered() bool {
	return len(q.states) > 0 || !q.since.IsZero() || !q.until.IsZero()
}

// parseList reads a listQuery from f at now.
func parseList(ctx context.Context, store Store, f form, now time.Time) (q listQuery, err error) {
	if q.topic, err = f.topic(ctx, store, "topic"); err != nil {
		return q, err
	}
	if q.states, err = f.states("state"); err != nil {
		return q, err
	}
	q.identifier, q.reference = url.Values(f).Get("identifier"), url.Values(f).Get("reference")
	q.sinceText, q.untilText = f.text("since"), f.text("until")
	if q.since, err = f.when("since", now); err != nil {
		return q, err
	}
	if q.until, err = f.when("until", now); err != nil {
		return q, err
	}
	if !q.since.IsZero() && !q.until.IsZero() && q.since.After(q.until) {
		return q, badRequest("since (%s) is after until (%s)", stamp(q.since), stamp(q.until))
	}
	if q.after, err = f.sequence("after"); err != nil {
		return q, err
	}
	if q.before, err = f.sequence("before"); err != nil {
		return q, err
	}
	q.last = f.text("last") != ""
	switch order := f.text("order"); order {
	case "", orderNewest:
	case orderOldest:
		q.oldest = true
	default:
		return q, badRequest("order %q: give %s or %s", order, orderNewest, orderOldest)
	}
	if (q.after > 0) && (q.before > 0 || q.last) || q.before > 0 && q.last {
		return q, badRequest("give one place to start from: after, before or last")
	}
	q.limit, err = f.number("limit", pageSize, 1, maxPageSize)
	return q, err
}

// values writes the filters of q (not its cursor) as form values.
func (q listQuery) values() url.Values {
	v := url.Values{"topic": {q.topic}}
	for _, s := range q.states {
		v.Add("state", s.String())
	}
	for name, value := range map[string]string{"identifier": q.identifier, "reference": q.reference, "since": q.sinceText, "until": q.untilText} {
		if value != "" {
			v.Set(name, value)
		}
	}
	if q.limit != pageSize {
		v.Set("limit", strconv.Itoa(q.limit))
	}
	if q.oldest {
		v.Set("order", orderOldest)
	}
	return v
}

// at returns the link to the page of q that starts at a cursor: name
// (after, before or last) and its value.
func (q listQuery) at(name string, value string) string {
	v := q.values()
	if name != "" {
		v.Set(name, value)
	}
	return link("/topic", v)
}

// listing is the filter of Page.
func (q listQuery) listing() taskapi.Listing {
	return taskapi.Listing{States: q.states, Identifier: q.identifier, Reference: q.reference}
}

// fromNewest says whether a page without a cursor starts at the newest
// task (of the window): the first page newest first, the last oldest first.
func (q listQuery) fromNewest() bool { return q.last == q.oldest }

// forward says whether the page is read in ascending sequences.
func (q listQuery) forward() bool {
	return q.after > 0 || q.before == 0 && !q.fromNewest()
}

// read reads the page: limit tasks from its start, in the order shown,
// and whether more follow in the direction it was read. Only Page, which
// walks an index from the start (after a seek of the start of a time
// window); nothing is counted.
func (q listQuery) read(ctx context.Context, store Store) (infos []taskapi.Info, more bool, err error) {
	listing, size := q.listing(), q.limit+1
	switch {
	case q.after > 0:
		infos, err = store.Page(ctx, q.topic, listing, q.after, size, taskapi.Forward)
	case q.before > 0:
		infos, err = store.Page(ctx, q.topic, listing, q.before, size, taskapi.Backward)
	case !q.forward() && !q.until.IsZero():
		infos, err = q.pageAt(ctx, store, q.until, taskapi.Backward)
	case !q.forward():
		infos, err = store.Page(ctx, q.topic, listing, taskapi.MaxSequence, size, taskapi.Backward)
	case !q.since.IsZero():
		infos, err = q.pageAt(ctx, store, q.since, taskapi.Forward)
	default:
		infos, err = store.Page(ctx, q.topic, listing, taskapi.Inception, size, taskapi.Forward)
	}
	if err != nil {
		return nil, false, err
	}
	infos = q.window(infos)
	if more = len(infos) > q.limit; more {
		infos = infos[:q.limit]
	}
	if q.forward() != q.oldest {
		slices.Reverse(infos)
	}
	return infos, more, nil
}

// pageAt reads the page that starts at t in direction (see seek).
func (q listQuery) pageAt(ctx context.Context, store Store, t time.Time, direction taskapi.Direction) ([]taskapi.Info, error) {
	cursor, ok, err := seek(ctx, store, q.topic, t, direction)
	if err != nil || !ok {
		return nil, err
	}
	return store.Page(ctx, q.topic, q.listing(), cursor, q.limit+1, direction)
}

// window keeps the tasks up to the first one created outside q's window.
func (q listQuery) window(infos []taskapi.Info) []taskapi.Info {
	for i, info := range infos {
		if !q.until.IsZero() && info.Created.After(q.until) || !q.since.IsZero() && info.Created.Before(q.since) {
			return infos[:i]
		}
	}
	return infos
}

// beyond says whether a task of q lies past seq in direction (one more
// index probe), within q's window.
func (q listQuery) beyond(ctx context.Context, store Store, seq int64, direction taskapi.Direction) (bool, error) {
	infos, err := store.Page(ctx, q.topic, q.listing(), seq, 1, direction)
	return len(q.window(infos)) > 0, err
}

// topicData is a topic's page.
type topicData struct {
	Topic      string
	Activation taskapi.Activation
	Activate   []activationLink
	Capacity   int64  // 0: none
	Resize     string // the link to set or remove the capacity
	Limits     taskapi.Limits
	Regulate   string // the link to set or remove the limits
	Ready      int64
	Wait       ops.Wait
	Health     health // the cues raised (health.go)
	Counts     []stateCount
	CountedAt  time.Time
	Done       int64
	Charts     []template.HTML `json:"-"` // drawings: the JSON API leaves them out
	Filter     filterForm
	States     []taskapi.State
	Tasks      []taskRow
	First      string
	Prev, Next string
	Last       string
	Resort     string // the link to the first page in the other order
	ReadOnly   bool
	Query      url.Values // the filters, for the forms of actions
	// CancelReady offers to cancel the READY tasks the page shows when it
	// lists the tasks of one identifier (action_cancel.go).
	CancelReady *cancelOffer
}

// activationLink is a button to change a topic's activation.
type activationLink struct{ Label, Link string }

// stateCount is the count of one state.
type stateCount struct {
	State taskapi.State
	Count int64
	Link  string
}

// filterForm is the filter form as the user filled it.
type filterForm struct {
	States                map[taskapi.State]bool
	Identifier, Reference string
	Since, Until          string
	Limit                 int
	Oldest                bool // oldest first
	Filtered              bool
}

// topicPage shows a topic: its figures from the sampler, and a page of its
// tasks read from the database.
func (s *Server) topicPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if to, err := contentSearch(form(r.URL.Query())); err != nil || to != "" {
		if err != nil {
			s.fail(w, r, err)
		} else {
			http.Redirect(w, r, to, http.StatusSeeOther)
		}
		return
	}
	q, err := parseList(ctx, s.cfg.Reads, form(r.URL.Query()), time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if q.filtered() {
		leave, err := s.filtered.enter(ctx)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer leave()
	}
	infos, more, err := q.read(ctx, s.cfg.Reads)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := s.topicFigures(q.topic)
	d.Tasks, d.ReadOnly, d.Query = rowsOf(q.topic, infos), s.cfg.ReadOnly, q.values()
	d.Filter = filterForm{States: map[taskapi.State]bool{}, Identifier: q.identifier, Reference: q.reference,
		Since: q.sinceText, Until: q.untilText, Limit: q.limit, Oldest: q.oldest}
	for _, st := range q.states {
		d.Filter.States[st] = true
	}
	if q.identifier != "" {
		d.CancelReady = offerCancelReady(q.topic, q.identifier, infos)
	}
	d.Filter.Filtered = len(q.states) > 0 || q.identifier != "" || q.reference != "" || q.sinceText != "" || q.untilText != ""
	if err := s.pageLinks(ctx, q, infos, more, &d); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "topic", frame{Title: q.topic, Nav: "topics", Data: d})
}

// contentSearch returns the search that a topic's page filtered by a
// field of the input or a text of the output is (empty when it is not):
// no index holds what inputs and outputs say, so the search reads the
// tasks one by one within its budget, and offers its actions on all it
// found. The states go with it, and the identifier and the reference as
// prefixes; a range of creation times it does not take.
func contentSearch(f form) (string, error) {
	v := url.Values(f)
	if v.Get("field") == "" && v.Get("value") == "" && v.Get("output") == "" {
		return "", nil
	}
	if f.text("since") != "" || f.text("until") != "" {
		return "", badRequest("a filter of the input or the output searches the tasks one by one, newest first, and takes no range of creation times: leave since and until empty")
	}
	return link("/search", url.Values{"topic": v["topic"], "state": v["state"], "identifier": v["identifier"], "reference": v["reference"],
		"field": v["field"], "value": v["value"], "output": v["output"]}), nil
}

// pageLinks sets the links to the first, previous, next and last pages,
// in the order shown: the previous page holds newer tasks newest first,
// older ones oldest first.
func (s *Server) pageLinks(ctx context.Context, q listQuery, infos []taskapi.Info, more bool, d *topicData) error {
	d.First, d.Last = q.at("", ""), q.at("last", "1")
	other := q
	other.oldest = !q.oldest
	d.Resort = other.at("", "")
	if len(infos) == 0 {
		return nil
	}
	lo, hi := infos[0].Sequence, infos[len(infos)-1].Sequence
	if !q.oldest {
		lo, hi = hi, lo
	}
	older, newer := more && !q.forward(), more && q.forward()
	var err error
	if fromStart := q.forward() && q.after == 0 && q.since.IsZero(); !older && !fromStart {
		older, err = q.beyond(ctx, s.cfg.Reads, lo, taskapi.Backward)
	}
	if err == nil && !newer && !q.forward() {
		newer, err = q.beyond(ctx, s.cfg.Reads, hi, taskapi.Forward)
	}
	var olderLink, newerLink string
	if older {
		olderLink = q.at("before", strconv.FormatInt(lo, 10))
	}
	if newer {
		newerLink = q.at("after", strconv.FormatInt(hi, 10))
	}
	d.Prev, d.Next = olderLink, newerLink
	if !q.oldest {
		d.Prev, d.Next = newerLink, olderLink
	}
	return err
}

// topicFigures are the figures of topic from the sampler's last reading.
func (s *Server) topicFigures(topic string) topicData {
	v := s.sampler.snapshot()
	d := topicData{Topic: topic, Activation: v.activations[topic], Ready: v.ready[topic], Wait: v.waits[topic],
		CountedAt: v.tally.at, States: allStates, Health: v.cues[topic],
		Capacity: v.capacities[topic], Resize: link("/action/capacity", url.Values{"topic": {topic}}),
		Limits: v.limits[topic], Regulate: link("/action/limits", url.Values{"topic": {topic}})}
	for _, to := range []taskapi.Activation{taskapi.Paused, taskapi.Draining, taskapi.Running} {
		if to != d.Activation {
			label := map[taskapi.Activation]string{taskapi.Paused: "Pause", taskapi.Draining: "Drain", taskapi.Running: "Resume"}[to]
			d.Activate = append(d.Activate, activationLink{label, link("/action/activation", url.Values{"topic": {topic}, "to": {to.String()}})})
		}
	}
	for _, st := range allStates {
		d.Counts = append(d.Counts, stateCount{State: st, Count: v.tally.counts[topic][st],
			Link: link("/topic", url.Values{"topic": {topic}, "state": {st.String()}})})
	}
	perMinute := v.perMinute(topic)
	for _, n := range perMinute {
		d.Done += n
	}
	waits, readies := curves(v.series[topic])
	d.Charts = []template.HTML{
		barChart("Completed per minute in “"+topic+"”", perMinute, v.at),
		lineChart("WAIT (push→start latency of the next task)", waits, v.at, durationLabel, waitPast(v.series[topic], v.began, v.at)),
		lineChart("READY tasks", readies, v.at, countLabel, readyPast(v.began)),
	}
	return d
}
