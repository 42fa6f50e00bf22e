package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
)

// capacityField is the capacity asked for; the capacity the confirmation
// showed goes back in fromField, as an activation's does.
const capacityField = "capacity"

// planCapacity sets or removes the capacity of one topic: topic and
// capacity (a whole number of READY tasks, 0 removing it). Without
// capacity the confirmation asks for it; a topic that has it already
// changes nothing.
func (s *Server) planCapacity(ctx context.Context, f form, preview bool) (*plan, error) {
	topic, err := f.topic(ctx, s.cfg.Store, "topic")
	if err != nil {
		return nil, err
	}
	current, err := s.cfg.Store.Capacities(ctx)
	if err != nil {
		return nil, fmt.Errorf("read capacities: %w", err)
	}
	p := &plan{Title: "Set the capacity", Hidden: url.Values{"topic": {topic}}, Back: topicLink(topic)}
	if f.text(capacityField) == "" {
		p.Choose = []field{capacityChoice(topic, current[topic])}
		return p, nil
	}
	to, err := ops.ParseCapacity(capacityField, f.text(capacityField))
	if err != nil {
		return nil, err
	}
	confirmed, err := confirmedCapacity(f, current[topic], preview)
	if err != nil {
		return nil, err
	}
	p.Hidden.Set(capacityField, strconv.FormatInt(to, 10))
	p.Hidden.Set(fromField, strconv.FormatInt(confirmed, 10))
	p.Lines, p.None = s.capacityLines(topic, current[topic], to)
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.setCapacity(ctx, p, topic, confirmed, to)
	}
	return p, nil
}

// capacityChoice asks for the capacity of topic, the current one filled
// in.
func capacityChoice(topic string, current int64) field {
	f := field{Name: capacityField, Label: fmt.Sprintf("Capacity of %q", topic),
		Help: "The most READY tasks, deferred ones included, that pushes may leave in the topic: a push that would leave more fails. 0 removes the capacity."}
	if current > 0 {
		f.Value = strconv.FormatInt(current, 10)
	}
	return f
}

// confirmedCapacity returns the capacity of the topic as the confirmation
// showed it: current for the confirmation (preview), else the from value
// it sent back.
func confirmedCapacity(f form, current int64, preview bool) (int64, error) {
	if preview {
		return current, nil
	}
	from, err := strconv.ParseInt(f.text(fromField), 10, 64)
	if err != nil || from < 0 {
		return 0, badRequest("%s %q: the capacity the confirmation showed is missing; open the confirmation again", fromField, f.text(fromField))
	}
	return from, nil
}

// capacityLines say what setting the capacity of topic from current to
// to would change, and none when nothing would.
func (s *Server) capacityLines(topic string, current, to int64) (lines []string, none bool) {
	if current == to {
		return []string{fmt.Sprintf("%q has %s already: nothing would change", topic, capacityWords(to))}, true
	}
	lines = []string{fmt.Sprintf("%q: %s → %s", topic, capacityWords(current), capacityWords(to))}
	if to == 0 {
		return append(lines, "Every push will be admitted."), false
	}
	ready := s.sampler.snapshot().ready[topic]
	lines = append(lines, fmt.Sprintf("A push that would leave more than %s READY tasks in it will fail and change nothing; it held %s READY at the last reading.", num(to), num(ready)))
	if ready > to {
		lines = append(lines, "It holds more already: it keeps them, and refuses pushes until consumers take it below its capacity.")
	}
	return lines, false
}

// setCapacity sets the capacity of topic to to, unless it changed since
// its confirmation showed confirmed.
func (s *Server) setCapacity(ctx context.Context, p *plan, topic string, confirmed, to int64) (*outcome, error) {
	current, err := s.cfg.Store.Capacities(ctx)
	if err != nil {
		return nil, fmt.Errorf("read capacities: %w", err)
	}
	o := &outcome{Title: p.Title, Back: p.Back}
	switch now := current[topic]; {
	case now != confirmed:
		o.Lines = []string{fmt.Sprintf("skipped %q: it has %s now, not %s as confirmed; it was left as it is", topic, capacityWords(now), capacityWords(confirmed))}
	case now == to:
		o.Lines = []string{fmt.Sprintf("%q had %s already", topic, capacityWords(to))}
	default:
		if err := s.cfg.Store.SetCapacity(ctx, topic, to); err != nil {
			return nil, err
		}
		o.Lines, o.Changed = []string{fmt.Sprintf("%q had %s and has %s", topic, capacityWords(now), capacityWords(to))}, 1
	}
	return o, nil
}

// capacityWords says a capacity in words: "a capacity of 1,000 READY
// tasks", "no capacity".
func capacityWords(n int64) string {
	if n <= 0 {
		return "no capacity"
	}
	return "a capacity of " + num(n) + " READY tasks"
}
