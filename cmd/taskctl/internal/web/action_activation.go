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

// planActivation pauses, resumes or drains topics: topic (repeated) and
// to (RUNNING, PAUSED or DRAINING).
func (s *Server) planActivation(ctx context.Context, f form, _ bool) (*plan, error) {
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
	p := &plan{
		Title:  fmt.Sprintf("Set %s", to),
		Hidden: url.Values{"topic": topics, "to": {to.String()}},
		Back:   topicLink(topics[0]),
	}
	for _, t := range topics {
		p.Lines = append(p.Lines, fmt.Sprintf("%q: %s → %s: %s", t, current[t], to, activationEffects[to]))
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		o := &outcome{Title: p.Title, Back: p.Back}
		for _, t := range topics {
			if err := s.cfg.Store.SetActivation(ctx, t, to); err != nil {
				return o, err // the topics before t changed: recorded with err
			}
			o.Lines = append(o.Lines, fmt.Sprintf("%q was %s and is %s", t, current[t], to))
			o.Changed++
		}
		return o, nil
	}
	return p, nil
}
