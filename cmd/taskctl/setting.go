package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// setting is what a topic may be given by a command of its own, capacity
// or limits: read for every topic at once, set for one, said in words and
// in JSON. showSetting and changeSetting run such a command, so that each
// checks its topic, sets, audits and reports alike.
type setting[V any] struct {
	what   string // "capacity", "limits": in the error of a failed read
	read   func(s store, ctx context.Context) (map[string]V, error)
	set    func(s store, ctx context.Context, topic string, v V) error
	text   func(topic string, v V) string // the output in words, and the audit's outcome
	report func(topic string, v V) any    // the output of --json
	args   func(v V) map[string]any       // the parameters the audit records, by name
}

// readSetting opens the store on topic with open (openTopics, or
// openReadTopics for a command that only shows it), which must be
// registered (exit code 4 otherwise), and reads its st: the zero V when
// it has none.
func readSetting[V any](ctx context.Context, open func(context.Context, ...string) (store, error), topic string, st setting[V]) (store, V, error) {
	var none V
	s, err := open(ctx, topic)
	if err != nil {
		return nil, none, err
	}
	all, err := st.read(s, ctx)
	if err != nil {
		return nil, none, fmt.Errorf("read the %s of %q: %w", st.what, topic, err)
	}
	return s, all[topic], nil
}

// showSetting prints the st of topic.
func showSetting[V any](a *app, cmd *cobra.Command, topic string, st setting[V]) error {
	_, v, err := readSetting(cmd.Context(), a.openReadTopics, topic, st)
	if err != nil {
		return err
	}
	return reportSetting(a, topic, st, v)
}

// changeSetting sets the st of topic to what to makes of its current one
// (a command may change a part of it and keep the rest), and records the
// change in the audit log.
func changeSetting[V any](a *app, cmd *cobra.Command, topic string, st setting[V], to func(current V) V) error {
	s, current, err := readSetting(cmd.Context(), a.openTopics, topic, st)
	if err != nil {
		return err
	}
	v := to(current)
	if err := st.set(s, cmd.Context(), topic, v); err != nil {
		return err // a failed set changed nothing: nothing to audit
	}
	a.audited(s, change{cmd: cmd, topics: []string{topic}, args: st.args(v), changed: 1, outcome: st.text(topic, v)}, nil)
	return reportSetting(a, topic, st, v)
}

// reportSetting prints the st of topic, as set or as read.
func reportSetting[V any](a *app, topic string, st setting[V], v V) error {
	if a.json {
		return a.printJSON(st.report(topic, v))
	}
	a.printf("%s\n", st.text(topic, v))
	return nil
}

// optional is a count for JSON: nil, null, for none (0).
func optional(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}
