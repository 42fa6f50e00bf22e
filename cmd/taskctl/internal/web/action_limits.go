package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// limitFields are the limits asked for, each with the limit of
// taskapi.Limits it sets, in the order of their from values; the limits
// the confirmation showed go back in fromField.
var limitFields = []struct {
	name, label, help string
	limit             func(l *taskapi.Limits) *int64
}{
	{"active", "Most ACTIVE tasks", "across every process that polls the topic",
		func(l *taskapi.Limits) *int64 { return &l.Active }},
	{"per_identifier", "Most ACTIVE tasks per identifier", "of one identifier, across every process",
		func(l *taskapi.Limits) *int64 { return &l.PerIdentifier }},
}

// planLimits sets or removes the limits of one topic: topic, active and
// per_identifier (whole numbers of ACTIVE tasks, 0 removing the limit; a
// limit not given is kept). Without either the confirmation asks for
// them; a topic that has them already changes nothing.
func (s *Server) planLimits(ctx context.Context, f form, preview bool) (*plan, error) {
	return planSetting(ctx, s.cfg.Store, f, preview, topicSetting[taskapi.Limits]{
		title: "Set the limits", noun: "limits",
		read: s.cfg.Store.Limits, set: s.cfg.Store.SetLimits, words: limitsWords,
		parse: parseLimits, choose: limitsChoice,
		put: func(hidden url.Values, l taskapi.Limits) {
			for _, lf := range limitFields {
				hidden[lf.name] = countValues(*lf.limit(&l))
			}
		},
		from:    func(l taskapi.Limits) []string { return countValues(l.Active, l.PerIdentifier) },
		decode:  decodeLimits,
		effects: s.limitsEffects,
	})
}

// parseLimits reads the limits asked for, those not given kept from
// current; given is false when the form has neither.
func parseLimits(f form, current taskapi.Limits) (to taskapi.Limits, given bool, err error) {
	to = current
	for _, lf := range limitFields {
		text := f.text(lf.name)
		if text == "" {
			continue
		}
		if *lf.limit(&to), err = ops.ParseLimit(lf.name, text); err != nil {
			return to, false, err
		}
		given = true
	}
	return to, given, nil
}

// decodeLimits reads the limits the confirmation showed.
func decodeLimits(from []string) (taskapi.Limits, bool) {
	counts, ok := fromCounts(from, len(limitFields))
	if !ok {
		return taskapi.Limits{}, false
	}
	return taskapi.Limits{Active: counts[0], PerIdentifier: counts[1]}, true
}

// limitsChoice asks for the limits of topic, the current ones filled in.
func limitsChoice(topic string, current taskapi.Limits) []field {
	var fields []field
	for _, lf := range limitFields {
		f := field{Name: lf.name, Label: fmt.Sprintf("%s of %q", lf.label, topic),
			Help: fmt.Sprintf("The most tasks of the topic ACTIVE at once, %s: polls take no more. 0 removes the limit; empty keeps it.", lf.help)}
		if n := *lf.limit(&current); n > 0 {
			f.Value = strconv.FormatInt(n, 10)
		}
		fields = append(fields, f)
	}
	return fields
}

// limitsEffects say what setting the limits of topic to to does to its
// polls.
func (s *Server) limitsEffects(topic string, _, to taskapi.Limits) []string {
	if to == (taskapi.Limits{}) {
		return []string{"Its polls will take any number of tasks."}
	}
	active := s.sampler.snapshot().tally.counts[topic][taskapi.Active]
	lines := []string{fmt.Sprintf("Polls of it, whatever process sends them, will take fewer tasks, or none, rather than go over these limits; it had %s ACTIVE at the last count.", num(active))}
	if to.Active > 0 && active > to.Active {
		lines = append(lines, "It has more ACTIVE already: they stay ACTIVE, and its polls take none until it is below its limit.")
	}
	return lines
}

// limitsWords says limits in words: "at most 5 ACTIVE tasks across the
// fleet, at most 2 per identifier", "no limits".
func limitsWords(l taskapi.Limits) string {
	if words := ops.LimitsWords(l, num); words != "" {
		return words
	}
	return "no limits"
}
