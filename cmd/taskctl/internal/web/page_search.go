package web

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// maxFoundListed bounds the tasks the search page lists (its actions name
// every one found).
const maxFoundListed = 100

// searchData is the search page.
type searchData struct {
	Topic, Identifier, Reference, Field, Value string
	Output                                     string          // text the output holds (an error's, say)
	States                                     []taskapi.State // the states searched; none: every one
	Boxes                                      []stateBox      // the states the form offers
	Whole                                      bool            // read within the read timeout, for a whole group
	Asked                                      bool            // a search was given
	Found                                      int64
	Scanned                                    int64
	Partial                                    bool
	Older                                      string // the link that searches the field in older tasks
	Limit, ScanLimit                           int64
	Rows                                       []taskRow
	Topics                                     []foundTopic
	ReadOnly                                   bool
}

// stateBox is a state the search form offers, ticked when searched.
type stateBox struct {
	State   taskapi.State
	Checked bool
}

// foundTopic is what a search found in one topic, with the links of the
// actions on all of it: each action names the tasks it can take by
// sequence, so that it changes those and no other.
type foundTopic struct {
	Topic                                   string
	Count                                   int64
	Revivable, Ready, Cancellable, Finished int64
	Revive, Reassign, Defer, Cancel, Purge  string
}

// searchPage finds tasks by a prefix of their identifier or reference, in
// one topic or every one, and by a field of their input in one topic, the
// newest first, and offers actions on all it found.
//
// It reads within the page's read timeout (deadline.go).
func (s *Server) searchPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := form(r.URL.Query())
	d := searchData{Topic: f.text("topic"), Identifier: url.Values(f).Get("identifier"), Reference: url.Values(f).Get("reference"),
		Field: f.text("field"), Value: url.Values(f).Get("value"), Output: url.Values(f).Get("output"), Whole: f.text("whole") == "1",
		Limit: maxFound, ScanLimit: maxScanned, ReadOnly: s.cfg.ReadOnly}
	var q *searchQuery
	var err error
	if d.States, err = f.states("state"); err == nil {
		q, err = parseSearch(d)
	}
	for _, st := range allStates {
		d.Boxes = append(d.Boxes, stateBox{State: st, Checked: slices.Contains(d.States, st)})
	}
	if err == nil && q != nil {
		q.before, err = f.sequence("before")
		if q.before == 0 {
			q.before = taskapi.MaxSequence
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if d.Asked = q != nil; d.Asked {
		if err := s.search(ctx, q, &d); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "search", frame{Title: "Search", Nav: "search", Data: d})
}

// parseSearch checks the values of the search form; nil when nothing is
// asked.
func parseSearch(d searchData) (*searchQuery, error) {
	q := &searchQuery{topic: d.Topic, search: taskapi.Search{Identifier: d.Identifier, Reference: d.Reference},
		fieldText: d.Field, value: d.Value, output: d.Output, whole: d.Whole, states: d.States}
	q.identified = d.Identifier != "" || d.Reference != ""
	var err error
	if q.field, err = parseContent(d.Field, d.Value, d.Output); err != nil {
		return nil, err
	}
	switch {
	case d.Field != "" && d.Topic == "":
		return nil, badRequest("a search by a field of the input reads the tasks one by one: give a topic")
	case d.Output != "" && d.Topic == "":
		return nil, badRequest("a search by the text of the output reads the tasks one by one: give a topic")
	}
	if len(d.States) > 0 && d.Topic == "" {
		return nil, badRequest("a search of tasks in a state reads them one by one: give a topic")
	}
	if !q.identified && !q.scans() {
		return nil, nil
	}
	if q.identified {
		if _, err := check.Find("topic", q.search, taskapi.MaxSequence, 1); err != nil {
			return nil, badRequest("%v", strings.TrimSuffix(err.Error(), ": "+taskapi.ErrInvalidArgument.Error()))
		}
	}
	return q, nil
}

// parseContent checks a filter of the content of tasks: a field of the
// input (keys by dots) with its value, and a text of the output; it
// returns the field's path.
func parseContent(field, value, output string) ([]string, error) {
	var path []string
	if field != "" {
		if path = strings.Split(field, "."); slices.Contains(path, "") {
			return nil, badRequest("field %q: give the keys of the input's JSON separated by dots, such as customer.id", field)
		}
	} else if value != "" {
		return nil, badRequest("value %q: give the field it is the value of, such as customer.id", value)
	}
	if output != "" && (!utf8.ValidString(output) || len(output) > maxOutputText) {
		return nil, badRequest("output: give at most %d bytes of valid UTF-8 text", maxOutputText)
	}
	return path, nil
}

// search runs q into d.
func (s *Server) search(ctx context.Context, q *searchQuery, d *searchData) error {
	topics := []string{q.topic}
	if q.topic == "" {
		var err error
		if topics, err = s.cfg.Reads.Topics(ctx); err != nil {
			return err
		}
	} else if err := knownTopics(ctx, s.cfg.Reads, q.topic); err != nil {
		return err
	}
	res, err := runSearch(ctx, s.cfg.Reads, *q, topics)
	if err != nil {
		return err
	}
	d.Found, d.Scanned, d.Partial = int64(res.n), int64(res.scanned), res.partial
	if res.next > 0 {
		d.Older = link("/search", url.Values{"topic": {q.topic}, "identifier": {q.search.Identifier},
			"reference": {q.search.Reference}, "field": {q.fieldText}, "value": {q.value}, "output": {q.output}, "state": stateNames(q.states), "whole": {wholeValue(q.whole)}, "before": {itoa(res.next)}})
	}
	for _, topic := range res.topics {
		infos := res.infos[topic]
		d.Rows = append(d.Rows, rowsOf(topic, infos)...)
		d.Topics = append(d.Topics, foundLinks(topic, infos))
	}
	// Newest first across the topics too: sequences are shared by all.
	slices.SortFunc(d.Rows, func(a, b taskRow) int { return cmp.Compare(b.Info.Sequence, a.Info.Sequence) })
	d.Rows = d.Rows[:min(len(d.Rows), maxFoundListed)]
	return nil
}

// foundLinks returns the actions on what a search found in topic: revive
// and reassign of those in EXPIRED to SUCCEEDED, defer of the READY ones,
// cancel of the READY, ACTIVE and SUSPENDED ones, each while in the state it was
// found in, purge of the finished ones (FAILED to CANCELLED) in the states
// they were found in.
func foundLinks(topic string, infos []taskapi.Info) foundTopic {
	var revivable, ready, finished []int64
	var states []taskapi.State
	var cancellable []taskapi.Info
	for _, info := range infos {
		if info.State.Cancellable() {
			cancellable = append(cancellable, info)
		}
		if info.State.Revivable() {
			revivable = append(revivable, info.Sequence)
		}
		if info.State == taskapi.Ready {
			ready = append(ready, info.Sequence)
		}
		if info.State >= taskapi.Failed {
			finished = append(finished, info.Sequence)
			if !slices.Contains(states, info.State) {
				states = append(states, info.State)
			}
		}
	}
	slices.Sort(states)
	named := func(seqs []int64) url.Values { return url.Values{"topic": {topic}, "seq": seqValues(seqs)} }
	purge := named(finished)
	purge["in"] = stateNames(states)
	// The states go in the order of the sequences, ascending, as a
	// selection pairs them.
	slices.SortFunc(cancellable, func(a, b taskapi.Info) int { return cmp.Compare(a.Sequence, b.Sequence) })
	seqs, was := make([]int64, len(cancellable)), make([]taskapi.State, len(cancellable))
	for i, info := range cancellable {
		seqs[i], was[i] = info.Sequence, info.State
	}
	cancel := url.Values{"topic": {topic}, "seq": seqValues(seqs), wasField: wasValues(was)}
	return foundTopic{Topic: topic, Count: int64(len(infos)),
		Revivable: int64(len(revivable)), Ready: int64(len(ready)), Cancellable: int64(len(cancellable)), Finished: int64(len(finished)),
		Revive: link("/action/revive", named(revivable)), Reassign: link("/action/reassign", named(revivable)),
		Defer: link("/action/defer", named(ready)), Cancel: link("/action/cancel", cancel), Purge: link("/action/purge", purge)}
}

// wholeValue writes whole as the form value of a search's link: "1", or
// nothing.
func wholeValue(whole bool) string {
	if whole {
		return "1"
	}
	return ""
}
