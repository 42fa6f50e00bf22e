package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// maxFailureReads bounds the reads of the failures page (each of a chunk
// of one state of one topic, a millisecond or two): past it, the page
// groups what it has, the newest failures still, fewer of them. Only
// when the newest failures are spread over many topics does it matter.
const maxFailureReads = 80

// maxFailuresListed bounds the failures the page lists one by one (the
// groups count every one read).
const maxFailuresListed = 100

// failuresData is the failures page.
type failuresData struct {
	Topic    string          // the one topic shown; empty: every topic
	States   []taskapi.State // the states shown
	Limit    int64           // how many of the newest are grouped
	Read     int64           // how many were read
	Cut      bool            // the reading stopped at its bound of reads, before Limit
	Counted  time.Time       // of many topics: the sampler's count that chose the topics read; zero: counted for the page
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
	Count                int64
	Revive, Retry, Purge string
	Every                string // the search of every task of the topic with the group's error
}

// failuresPage lists the FAILED and SUSPENDED tasks of every topic (or
// of topic), the newest first, with the last error of each, grouped by
// error text, each group with its actions.
//
// It reads within the page's read timeout (deadline.go), and as a page
// filtered by state: through the gate of such pages (gate.go).
func (s *Server) failuresPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := form(r.URL.Query())
	d := failuresData{Limit: maxFailures, ReadOnly: s.cfg.ReadOnly}
	err := s.failureTopic(ctx, f, &d)
	if err == nil {
		d.States, err = failureStates(f)
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
	failures, cut, err := readFailures(ctx, s.cfg.Reads, counts, d.States, maxFailures, maxFailureReads)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Read, d.Cut = int64(len(failures)), cut
	for _, g := range groupFailures(failures) {
		d.Groups = append(d.Groups, failureView{failureGroup: g, Actions: groupLinks(g.Error, g.Topics)})
	}
	byFinished(failures)
	d.Listed = failures[:min(len(failures), maxFailuresListed)]
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

// groupLinks returns the links of the actions on each topic's part of a
// group: the tasks named by sequence, and for a purge the states they
// were seen in, so that the action changes these tasks and no other.
func groupLinks(errorText string, topics []groupTopic) []groupActions {
	out := make([]groupActions, len(topics))
	for i, gt := range topics {
		seqs := gt.Seqs[:min(len(gt.Seqs), maxSelected)]
		v := url.Values{"topic": {gt.Topic}, "seq": seqValues(seqs)}
		purge := url.Values{"topic": {gt.Topic}, "seq": seqValues(seqs), "in": stateNames(gt.States)}
		out[i] = groupActions{Topic: gt.Topic, Count: int64(len(seqs)),
			Revive: link("/action/revive", v), Retry: link("/action/retry", v), Purge: link("/action/purge", purge),
			Every: link("/search", url.Values{"topic": {gt.Topic}, "output": {errorText}, "whole": {"1"}})}
	}
	return out
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
