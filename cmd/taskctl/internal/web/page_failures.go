package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// minFailureShare is the least time the failures page reads for, when
// its read timeout leaves less than that: every page reads some.
const minFailureShare = 100 * time.Millisecond

// maxFailuresListed bounds the failures the page lists one by one (the
// groups count every one read).
const maxFailuresListed = 100

// failuresData is the failures page.
type failuresData struct {
	Topic    string          // the one topic shown; empty: every topic
	States   []taskapi.State // the states shown
	Field    string          // a field of the input, by dots, that must have Value
	Value    string
	Output   string    // a text the output must hold
	Filtered bool      // Field or Output is given
	Counts   int64     // how many the count found
	Read     int64     // how many were read
	Matched  int64     // of them, how many the filter kept: the groups count them
	Cut      bool      // the reading stopped at its share of the read timeout, before the oldest
	Counted  time.Time // of many topics: the sampler's count that chose the topics read; zero: counted for the page
	Groups   []failureView
	Listed   []failure // the newest, by time finished
	ReadOnly bool
}

// failureView is a group with the links of its actions.
type failureView struct {
	failureGroup
	Actions []groupActions
}

// groupActions are the links of a group's actions in one topic.
type groupActions struct {
	Topic                string
	Count                int64 // how many the actions name: at most maxSelected
	Of                   int64 // how many the group has in the topic
	Suspended            int64 // how many SUSPENDED ones Cancel names: at most maxSelected
	Revive, Retry, Purge string
	Cancel               string // of the SUSPENDED ones, when there are
	Every                string // the search of every task of the topic with the group's error
}

// failuresPage groups every FAILED and SUSPENDED task of every topic (or
// of topic) by its last error, each group with its actions, within three
// quarters of its read timeout (readFailures), and lists the newest of
// them with the last error of each.
//
// It reads within the page's read timeout (deadline.go), and as a page
// filtered by state: through the gate of such pages (gate.go).
func (s *Server) failuresPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := form(r.URL.Query())
	d := failuresData{ReadOnly: s.cfg.ReadOnly}
	err := s.failureTopic(ctx, f, &d)
	if err == nil {
		d.States, err = failureStates(f)
	}
	var match func(taskapi.Info) bool
	if err == nil {
		match, err = failureFilter(f, &d)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leave, err := s.filtered.enter(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer leave()
	counts, err := s.failureCounts(ctx, &d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	g := grouper{match: match}
	d.Cut, err = readFailures(ctx, s.cfg.Reads, counts, d.States, time.Now().Add(pageShare(ctx, minFailureShare)), &g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Counts, d.Read, d.Matched = total(counts), g.read, g.matched
	for _, gr := range g.result() {
		d.Groups = append(d.Groups, failureView{failureGroup: gr, Actions: groupLinks(gr.Error, gr.Topics)})
	}
	byFinished(g.kept)
	d.Listed = g.kept[:min(len(g.kept), maxFailuresListed)]
	s.render(w, r, http.StatusOK, "failures", frame{Title: "Failures", Nav: "failures", Data: d})
}

// failureTopic reads the one topic the page shows, when it is given.
func (s *Server) failureTopic(ctx context.Context, f form, d *failuresData) error {
	if f.text("topic") == "" {
		return nil
	}
	var err error
	d.Topic, err = f.topic(ctx, s.cfg.Reads, "topic")
	return err
}

// failureFilter reads the filter of the failures page from f into d: a
// field of the input with its value, a text of the output (an error's),
// as the search takes them. It returns what a failure must match to be
// grouped; nil when nothing is filtered.
func failureFilter(f form, d *failuresData) (func(taskapi.Info) bool, error) {
	d.Field, d.Value, d.Output = f.text("field"), url.Values(f).Get("value"), url.Values(f).Get("output")
	path, err := parseContent(d.Field, d.Value, d.Output)
	if d.Filtered = d.Field != "" || d.Output != ""; err != nil || !d.Filtered {
		return nil, err
	}
	return searchQuery{field: path, value: d.Value, output: d.Output}.matches, nil
}

// failureStates returns the states asked for, FAILED or SUSPENDED; both
// when none is.
func failureStates(f form) ([]taskapi.State, error) {
	states, err := f.states("state")
	if err != nil || len(states) == 0 {
		return failedStates, err
	}
	for _, st := range states {
		if st != taskapi.Failed && st != taskapi.Suspended {
			return nil, badRequest("state %s: the failures page lists FAILED and SUSPENDED tasks", st)
		}
	}
	return states, nil
}

// errorField carries the last error of a group of the failures page
// with the tasks of its actions: the confirmation shows it, and acts on
// the named tasks that still have it (selection.go).
const errorField = "error"

// groupLinks returns the links of the actions on each topic's part of a
// group: the tasks named by sequence (maxSelected at most) with the
// group's error, and for a purge the states they were seen in, for a
// cancellation the SUSPENDED ones, so that the action changes these tasks
// and no other.
func groupLinks(errorText string, topics []groupTopic) []groupActions {
	out := make([]groupActions, len(topics))
	for i, gt := range topics {
		seqs := gt.Seqs[:min(len(gt.Seqs), maxSelected)]
		v := url.Values{"topic": {gt.Topic}, "seq": seqValues(seqs), errorField: {errorText}}
		purge := url.Values{"topic": {gt.Topic}, "seq": seqValues(seqs), "in": stateNames(gt.States), errorField: {errorText}}
		out[i] = groupActions{Topic: gt.Topic, Count: int64(len(seqs)), Of: int64(len(gt.Seqs)),
			Revive: link("/action/revive", v), Retry: link("/action/retry", v), Purge: link("/action/purge", purge),
			Every: link("/search", url.Values{"topic": {gt.Topic}, "output": {errorText}, "whole": {"1"}})}
		if len(gt.Suspended) > 0 {
			out[i].Suspended, out[i].Cancel = suspendedLink(gt.Topic, errorText, gt.Suspended[:min(len(gt.Suspended), maxSelected)])
		}
	}
	return out
}

// suspendedLink returns the link of the cancellation of the SUSPENDED
// tasks of a group, seqs, and how many it names. FAILED tasks have ended:
// Cancel takes none.
func suspendedLink(topic, errorText string, seqs []int64) (int64, string) {
	was := wasValues(slices.Repeat([]taskapi.State{taskapi.Suspended}, len(seqs)))
	v := url.Values{"topic": {topic}, errorField: {errorText}, "seq": seqValues(seqs), wasField: was}
	return int64(len(seqs)), link("/action/cancel", v)
}

// total is how many tasks counts counts.
func total(counts map[string]map[taskapi.State]taskapi.Summary) int64 {
	var n int64
	for _, byState := range counts {
		for _, sum := range byState {
			n += sum.Count
		}
	}
	return n
}

// stateNames names states.
func stateNames(states []taskapi.State) []string {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.String()
	}
	return names
}

// exactFailureTopics is the most topics whose failed and suspended tasks
// the failures page of every topic counts itself: a count of two states
// over every topic plans over every partition, some 0.3 s at 300 topics.
const exactFailureTopics = 50

// failureCounts says which topics hold tasks in the states of d, and how
// many: counted for the page for one topic or a few; for more, from the
// sampler's last count of every topic (d.Counted says when), with the
// topics whose tasks failed or were suspended since, as the sampler's
// readings counted their completions. A failure that no reading has seen
// yet (within --refresh) shows at the next one.
func (s *Server) failureCounts(ctx context.Context, d *failuresData) (map[string]map[taskapi.State]taskapi.Summary, error) {
	v := s.sampler.snapshot()
	if d.Topic != "" || v.tally.counts == nil || len(v.topics) <= exactFailureTopics {
		return s.cfg.Reads.Count(ctx, taskapi.Total, taskapi.Counting{Topic: d.Topic, States: d.States}, taskapi.Unbounded)
	}
	d.Counted = v.tally.at
	return failuresSeen(v, d.States), nil
}

// failuresSeen returns the topics that held tasks in states at the
// sampler's last count of v, or completed some with the results of those
// states since, each state with a count and no highest sequence (the
// merge reads such a head first).
func failuresSeen(v view, states []taskapi.State) map[string]map[taskapi.State]taskapi.Summary {
	counts := map[string]map[taskapi.State]taskapi.Summary{}
	add := func(topic string, state taskapi.State, n int64) {
		if n <= 0 || !slices.Contains(states, state) {
			return
		}
		if counts[topic] == nil {
			counts[topic] = map[taskapi.State]taskapi.Summary{}
		}
		sum := counts[topic][state]
		counts[topic][state] = taskapi.Summary{Count: sum.Count + n, Bound: taskapi.MaxSequence}
	}
	for topic, byState := range v.tally.counts {
		for state, n := range byState {
			add(topic, state, n)
		}
	}
	if v.done != nil {
		first := bucketOf(v.tally.at, time.Minute) // the minute of the count, again: a completion in it may follow the count
		for topic, minutes := range v.done.minutes {
			for minute, c := range minutes {
				if minute >= first {
					add(topic, taskapi.Failed, c[taskapi.Failure])
					add(topic, taskapi.Suspended, c[taskapi.Suspension])
				}
			}
		}
	}
	return counts
}
