package web

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// form reads the values of a request: the query of a GET, the body of a
// POST (never the query, so that nothing changes through a link).
type form url.Values

// text returns the value of name, trimmed.
func (f form) text(name string) string {
	return strings.TrimSpace(url.Values(f).Get(name))
}

// topic returns the topic named by name, which must be registered.
func (f form) topic(ctx context.Context, store Store, name string) (string, error) {
	topic := url.Values(f).Get(name)
	if topic == "" {
		return "", badRequest("no topic: give %s", name)
	}
	return topic, knownTopics(ctx, store, topic)
}

// topics returns every topic named by name, each registered, at least one.
func (f form) topics(ctx context.Context, store Store, name string) ([]string, error) {
	topics := slices.DeleteFunc(slices.Clone(url.Values(f)[name]), func(t string) bool { return t == "" })
	if len(topics) == 0 {
		return nil, badRequest("no topic: give %s", name)
	}
	slices.Sort(topics)
	return slices.Compact(topics), knownTopics(ctx, store, topics...)
}

// knownTopics fails with a 404 unless every topic is registered.
func knownTopics(ctx context.Context, store Store, topics ...string) error {
	known, err := store.Topics(ctx)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if _, ok := slices.BinarySearch(known, t); !ok {
			return notFound("unknown topic %q", t)
		}
	}
	return nil
}

// sequence returns the sequence of name, 0 when not given.
func (f form) sequence(name string) (int64, error) {
	v := f.text(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest("%s %q is not a sequence: a positive whole number", name, v)
	}
	return n, nil
}

// sequences returns the sequences of name (repeated or comma-separated),
// sorted, without repeats.
func (f form) sequences(name string) ([]int64, error) {
	seqs, err := parseSeqValues(name, url.Values(f)[name], maxSelected)
	slices.Sort(seqs)
	return slices.Compact(seqs), err
}

// span returns the range of sequences from and to (each optional).
func (f form) span() (taskapi.Range, error) {
	r := taskapi.Unbounded
	from, err := f.sequence("from")
	if err != nil {
		return r, err
	}
	to, err := f.sequence("to")
	if err != nil {
		return r, err
	}
	if from > 0 {
		r.From = from
	}
	if to > 0 {
		r.To = to
	}
	if r.From > r.To {
		return r, badRequest("from %d is after to %d", r.From, r.To)
	}
	return r, nil
}

// states returns the states of name (repeated or comma-separated).
func (f form) states(name string) ([]taskapi.State, error) {
	states, err := ops.ParseStates(url.Values(f)[name])
	slices.Sort(states)
	return slices.Compact(states), err
}

// state returns the one state of name; ok is false when none is given.
func (f form) state(name string) (state taskapi.State, ok bool, err error) {
	states, err := f.states(name)
	switch {
	case err != nil:
		return state, false, err
	case len(states) > 1:
		return state, false, badRequest("%s takes one state", name)
	case len(states) == 0:
		return state, false, nil
	}
	return states[0], true, nil
}

// when returns the time of name (a time, "now", or a duration ago); the
// zero time when not given.
func (f form) when(name string, now time.Time) (time.Time, error) {
	v := f.text(name)
	if v == "" {
		return time.Time{}, nil
	}
	return ops.ParseWhen(name, v, now)
}

// number returns the whole number of name within [least, most], def when
// not given.
func (f form) number(name string, def, least, most int) (int, error) {
	v := f.text(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > most {
		return 0, badRequest("%s %q: give a whole number from %d to %d", name, v, least, most)
	}
	return n, nil
}

// link returns path with the query of values, for an href.
func link(path string, values url.Values) string {
	if len(values) == 0 {
		return path
	}
	return path + "?" + values.Encode()
}

// topicLink is the link to the page of topic.
func topicLink(topic string) string { return link("/topic", url.Values{"topic": {topic}}) }

// taskLink is the link to the page of a task.
func taskLink(topic string, seq int64) string {
	return link("/task", url.Values{"topic": {topic}, "seq": {strconv.FormatInt(seq, 10)}})
}
