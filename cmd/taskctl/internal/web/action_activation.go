package web

import (
	"context"
	"fmt"
	"net/url"

	"github.com/taskrepo/taskrepo/taskapi"
)

// activationEffects says what each activation makes the consumers do.
var activationEffects = map[taskapi.Activation]string{
	taskapi.Running:  "consumers claim its tasks again",
	taskapi.Paused:   "consumers claim none of its tasks; the batches they hold go on",
	taskapi.Draining: "consumers claim none of its tasks and finish the batches they hold",
}

// fromField carries the activation of each topic as the confirmation
// showed it, in the order of the topic values: the POST changes only the
// topics still in it.
const fromField = "from"

// planActivation pauses, resumes or drains topics: topic (repeated) and
// to (RUNNING, PAUSED or DRAINING). A topic already in to changes nothing;
// when none would change, there is nothing to confirm.
func (s *Server) planActivation(ctx context.Context, f form, preview bool) (*plan, error) {
	topics, err := f.topics(ctx, s.cfg.Store, "topic")
	if err != nil {
		return nil, err
	}
	to, err := taskapi.ParseActivation(f.text("to"))
	if err != nil {
		return nil, badRequest("to %q: give RUNNING, PAUSED or DRAINING", f.text("to"))
	}
	current, err := s.cfg.Store.Activations(ctx)
	if err != nil {
		return nil, err
	}
	confirmed, err := confirmedActivations(f, topics, current, preview)
	if err != nil {
		return nil, err
	}
	p := &plan{
		Title:  fmt.Sprintf("Set %s", to),
		Hidden: url.Values{"topic": topics, "to": {to.String()}},
		Back:   topicLink(topics[0]),
		None:   true,
	}
	for i, t := range topics {
		p.Hidden.Add(fromField, confirmed[i].String())
		if current[t] == to {
			p.Lines = append(p.Lines, fmt.Sprintf("%q is %s already: nothing would change", t, to))
			continue
		}
		p.None = false
		p.Lines = append(p.Lines, fmt.Sprintf("%q: %s → %s: %s", t, current[t], to, activationEffects[to]))
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.setActivations(ctx, p, topics, confirmed, to)
	}
	return p, nil
}

// confirmedActivations returns the activation of each topic as the
// confirmation showed it: current for the confirmation (preview), else
// the from values it sent back.
func confirmedActivations(f form, topics []string, current map[string]taskapi.Activation, preview bool) ([]taskapi.Activation, error) {
	out := make([]taskapi.Activation, len(topics))
	from := url.Values(f)[fromField]
	if !preview && len(from) != len(topics) {
		return nil, badRequest("%s: %d activations for %d topics: what the confirmation showed is missing; open the confirmation again",
			fromField, len(from), len(topics))
	}
	for i, t := range topics {
		out[i] = current[t]
		if !preview {
			var err error
			if out[i], err = taskapi.ParseActivation(from[i]); err != nil {
				return nil, badRequest("%s %q: give RUNNING, PAUSED or DRAINING", fromField, from[i])
			}
		}
	}
	return out, nil
}

// setActivations sets each topic still in the activation its
// confirmation showed (confirmed) to to, and skips the others.
func (s *Server) setActivations(ctx context.Context, p *plan, topics []string, confirmed []taskapi.Activation, to taskapi.Activation) (*outcome, error) {
	current, err := s.cfg.Store.Activations(ctx)
	if err != nil {
		return nil, err
	}
	o := &outcome{Title: p.Title, Back: p.Back}
	for i, t := range topics {
		switch {
		case current[t] != confirmed[i]:
			o.Lines = append(o.Lines, fmt.Sprintf("skipped %q: it is %s now, not %s as confirmed; it was left as it is", t, current[t], confirmed[i]))
		case current[t] == to:
			o.Lines = append(o.Lines, fmt.Sprintf("%q was %s already", t, to))
		default:
			if err := s.cfg.Store.SetActivation(ctx, t, to); err != nil {
				return o, err // the topics before t changed: recorded with err
			}
			o.Lines = append(o.Lines, fmt.Sprintf("%q was %s and is %s", t, current[t], to))
			o.Changed++
		}
	}
	return o, nil
}
