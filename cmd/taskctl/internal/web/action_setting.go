package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// topicSetting is a value of one topic that an action sets, its capacity
// or its limits: planSetting and changeSetting confirm and set each
// alike, bound to the value the confirmation showed, which goes back in
// fromField as an activation's does.
type topicSetting[V comparable] struct {
	title string // the action's title: "Set the capacity"
	noun  string // "capacity", "limits": in errors
	read  func(ctx context.Context) (map[string]V, error)
	set   func(ctx context.Context, topic string, v V) error
	words func(v V) string // "a capacity of 1,000 READY tasks", "no capacity"
	// parse reads the value asked for of the form, given the current one
	// (for what the form leaves out); given is false when the form asks
	// for nothing, and the confirmation asks for it with the fields of
	// choose.
	parse  func(f form, current V) (to V, given bool, err error)
	choose func(topic string, current V) []field
	// put and from write a value as form values, under its own names (put) and
	// as the values of fromField (from); decode reads those back, ok
	// false when they are not a value.
	put    func(hidden url.Values, v V)
	from   func(v V) []string
	decode func(from []string) (v V, ok bool)
	// effects say what changing the value from current to to does, beyond
	// the change itself.
	effects func(topic string, current, to V) []string
}

// planSetting sets the st of one topic: topic and the values of st. When
// they are missing the confirmation asks for them; a topic that has the
// value already changes nothing.
func planSetting[V comparable](ctx context.Context, store Store, f form, preview bool, st topicSetting[V]) (*plan, error) {
	topic, err := f.topic(ctx, store, "topic")
	if err != nil {
		return nil, err
	}
	all, err := st.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the %s: %w", st.noun, err)
	}
	current := all[topic]
	p := &plan{Title: st.title, Hidden: url.Values{"topic": {topic}}, Back: topicLink(topic)}
	to, given, err := st.parse(f, current)
	if err != nil {
		return nil, err
	}
	if !given {
		p.Choose = st.choose(topic, current)
		return p, nil
	}
	confirmed, err := confirmedSetting(f, current, preview, st)
	if err != nil {
		return nil, err
	}
	st.put(p.Hidden, to)
	p.Hidden[fromField] = st.from(confirmed)
	p.Lines, p.None = settingLines(topic, current, to, st)
	p.run = func(ctx context.Context) (*outcome, error) {
		return changeSetting(ctx, p, topic, confirmed, to, st)
	}
	return p, nil
}

// confirmedSetting returns the st of the topic as the confirmation showed
// it: current for the confirmation (preview), else the from values it
// sent back.
func confirmedSetting[V comparable](f form, current V, preview bool, st topicSetting[V]) (V, error) {
	if preview {
		return current, nil
	}
	from := url.Values(f)[fromField]
	v, ok := st.decode(from)
	if !ok {
		return v, badRequest("%s %q: the %s the confirmation showed is missing; open the confirmation again", fromField, strings.Join(from, ","), st.noun)
	}
	return v, nil
}

// settingLines say what setting the st of topic from current to to would
// change, and none when nothing would.
func settingLines[V comparable](topic string, current, to V, st topicSetting[V]) (lines []string, none bool) {
	if current == to {
		return []string{fmt.Sprintf("%q has %s already: nothing would change", topic, st.words(to))}, true
	}
	lines = []string{fmt.Sprintf("%q: %s → %s", topic, st.words(current), st.words(to))}
	return append(lines, st.effects(topic, current, to)...), false
}

// changeSetting sets the st of topic to to, unless it changed since its
// confirmation showed confirmed.
func changeSetting[V comparable](ctx context.Context, p *plan, topic string, confirmed, to V, st topicSetting[V]) (*outcome, error) {
	all, err := st.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the %s: %w", st.noun, err)
	}
	o := &outcome{Title: p.Title, Back: p.Back}
	switch now := all[topic]; {
	case now != confirmed:
		o.Lines = []string{fmt.Sprintf("skipped %q: it has %s now, not %s as confirmed; it was left as it is", topic, st.words(now), st.words(confirmed))}
	case now == to:
		o.Lines = []string{fmt.Sprintf("%q had %s already", topic, st.words(to))}
	default:
		if err := st.set(ctx, topic, to); err != nil {
			return nil, err
		}
		o.Lines, o.Changed = []string{fmt.Sprintf("%q had %s and has %s", topic, st.words(now), st.words(to))}, 1
	}
	return o, nil
}

// countValues writes whole numbers as form values.
func countValues(ns ...int64) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.FormatInt(n, 10)
	}
	return out
}

// fromCounts reads the n whole numbers, 0 or more, of from (a setting's
// from values); ok is false unless from holds exactly that.
func fromCounts(from []string, n int) (counts []int64, ok bool) {
	if len(from) != n {
		return nil, false
	}
	counts = make([]int64, n)
	for i, v := range from {
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil || c < 0 {
			return nil, false
		}
		counts[i] = c
	}
	return counts, true
}
