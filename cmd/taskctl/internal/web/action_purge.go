package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// planPurge deletes finished tasks: topic, states (default FAILED to
// CANCELLED), from and to, and before (a time) or older (a duration). The
// confirmation counts what would go, within the budget; the time is
// resolved to a sequence when the purge runs, and is sent back as a time.
func (s *Server) planPurge(ctx context.Context, f form, preview bool) (*plan, error) {
	if choosesTasks(f) {
		return s.planPurgeChosen(ctx, f, preview)
	}
	topic, err := f.topic(ctx, s.cfg.Store, "topic")
	if err != nil {
		return nil, err
	}
	states, err := f.states("state")
	if err != nil {
		return nil, err
	}
	span, err := f.span()
	if err != nil {
		return nil, err
	}
	cutoff, err := ops.Cutoff("before", f.text("before"), "older", f.text("older"), time.Now())
	if err != nil {
		return nil, err
	}
	b, err := s.confirmedBound(ctx, f, topic, preview)
	if err != nil {
		return nil, err
	}
	span = b.narrow(span)
	p := &plan{Title: "Purge tasks", Hidden: purgeValues(topic, states, span, cutoff), Back: topicLink(topic)}
	b.values(p.Hidden)
	if len(states) == 0 {
		states = ops.PurgedStates
	}
	if preview {
		if err := s.previewPurge(ctx, p, topic, states, span, cutoff); err != nil {
			return nil, err
		}
		p.bind(b)
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.purge(ctx, topic, states, span, cutoff, b.at)
	}
	return p, nil
}

// purgeValues writes what a purge deletes as the values of its form; a
// cutoff as the time it is.
func purgeValues(topic string, states []taskapi.State, span taskapi.Range, cutoff time.Time) url.Values {
	v := url.Values{"topic": {topic}}
	for _, st := range states {
		v.Add("state", st.String())
	}
	spanValues(v, span)
	if !cutoff.IsZero() {
		v.Set("before", cutoff.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// purgeable counts what a purge would delete: the tasks of topic in
// states within span created at or before cutoff (when given), and the
// lowest and highest of their sequences.
func (s *Server) purgeable(ctx context.Context, topic string, states []taskapi.State, span taskapi.Range, cutoff time.Time) (n, first, last int64, err error) {
	if span, err = ops.Before(ctx, s.cfg.Store, topic, span, cutoff); err != nil {
		return 0, 0, 0, err
	}
	return ops.Purgeable(ctx, s.cfg.Store, topic, span, states)
}

// previewPurge says in p what a purge would delete, counted within the
// budget.
func (s *Server) previewPurge(ctx context.Context, p *plan, topic string, states []taskapi.State, span taskapi.Range, cutoff time.Time) error {
	var first, last int64
	e, err := s.estimate(ctx, topic, states, span, func(ctx context.Context) (n int64, err error) {
		n, first, last, err = s.purgeable(ctx, topic, states, span, cutoff)
		return n, err
	})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("the %s tasks of %q with %s", stateList(states), topic, spanText(span))
	if !cutoff.IsZero() {
		what += ", created before " + stamp(cutoff)
	}
	change := e.tasks() + " would be deleted for good"
	if e.exact && e.n > 0 {
		change += fmt.Sprintf(" (sequences %d to %d)", first, last)
	}
	p.None = e.none()
	p.Lines = append([]string{what + ":", change + "."}, e.note("after the purge")...)
	p.Lines = append(p.Lines, slowNote(e, "purge")...)
	return nil
}

// purge deletes what planPurge names, completed at or before completedBy, and
// says what went.
func (s *Server) purge(ctx context.Context, topic string, states []taskapi.State, span taskapi.Range, cutoff, completedBy time.Time) (*outcome, error) {
	back := topicLink(topic)
	n, first, last, err := s.purgeable(ctx, topic, states, span, cutoff)
	if err != nil || n == 0 {
		return &outcome{Title: "Purged", Back: back, Lines: []string{"nothing to purge: no task matched."}}, err
	}
	purged, err := ops.PurgeChunked(ctx, s.cfg.Store, topic, taskapi.Range{From: first, To: last}, states, completedBy, n, func(int64) {})
	if err != nil && purged == 0 {
		return nil, err
	}
	o := &outcome{Title: "Purged", Back: back, Changed: purged,
		Lines: []string{fmt.Sprintf("deleted %s of %q (sequences %d to %d).", tasksWord(purged), topic, first, last)}}
	if err != nil {
		o.Lines = append(o.Lines, fmt.Sprintf("then it stopped: %v", err))
	}
	return o, nil
}

// stateList names states: "FAILED, SUCCEEDED".
func stateList(states []taskapi.State) string {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.String()
	}
	return strings.Join(names, ", ")
}
