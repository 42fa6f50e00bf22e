package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// selection picks tasks of a topic: by state within a range of
// sequences, or by their sequences.
type selection struct {
	topic     string
	state     string
	sequences []string
	span      spanFlags
}

func (s *selection) add(cmd *cobra.Command, stateHelp string) {
	topicFlag(cmd, &s.topic)
	cmd.Flags().StringVarP(&s.state, "state", "s", "", stateHelp)
	cmd.Flags().StringSliceVar(&s.sequences, "sequence", nil, "these tasks only (comma-separated sequences)")
	s.span.add(cmd)
}

// parse returns the state and range, or the sequences: exactly one of
// the two ways must be given.
func (s *selection) parse() (state taskapi.State, span taskapi.Range, seqs []int64, err error) {
	if seqs, err = parseSequences(s.sequences); err != nil {
		return state, span, nil, err
	}
	if span, err = s.span.span(); err != nil {
		return state, span, nil, err
	}
	switch {
	case len(seqs) > 0 && (s.state != "" || span != taskapi.Unbounded):
		return state, span, nil, usagef("give --sequence, or --state with --from/--to, not both")
	case len(seqs) > 0:
		return state, span, seqs, nil
	case s.state == "":
		return state, span, nil, usagef("say which tasks: --state (with --from/--to) or --sequence")
	}
	states, err := parseStates([]string{s.state})
	if err == nil && len(states) != 1 {
		err = usagef("--state takes one state")
	}
	if err != nil {
		return state, span, nil, err
	}
	return states[0], span, nil, nil
}

func (a *app) reviveCommand() *cobra.Command {
	var sel selection
	var how string
	c := &cobra.Command{
		Use:   "revive",
		Short: "Bring finished or expired tasks back to READY",
		Long: `revive brings tasks in EXPIRED to SUCCEEDED back: every task of a state
within a range of sequences, or the tasks named by --sequence. --how says
how: reset (the default) makes the task READY again in place, keeping its
sequence; append, supersede and replace mark it RECREATED and push a new
task with that insertion mode.`,
		Example: `  taskctl revive -t orders --state failed
  taskctl revive -t orders --state expired --from 1000 --to 2000 --how append
  taskctl revive -t orders --sequence 1234,1240`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.revive(cmd, sel, how) },
	}
	sel.add(c, "revive the tasks in this state: EXPIRED, FAILED, SUSPENDED, FILTERED or SUCCEEDED")
	c.Flags().StringVar(&how, "how", "reset", "reset, append, supersede or replace")
	return c
}

func (a *app) revive(cmd *cobra.Command, sel selection, how string) error {
	mode, err := taskapi.ParseRevivification(how)
	if err != nil {
		return usagef("--how %q: %v", how, err)
	}
	state, span, seqs, err := sel.parse()
	if err != nil {
		return err
	}
	if len(seqs) == 0 && !state.Revivable() {
		return usagef("--state %s: only EXPIRED to SUCCEEDED can be revived", state)
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, sel.topic)
	if err != nil {
		return err
	}
	var revived []taskapi.Revival
	if len(seqs) > 0 {
		var tasks []taskapi.Task
		if tasks, err = ops.LookupTasks(ctx, s, sel.topic, seqs); err != nil {
			return err
		}
		revived, err = s.ReviveTasks(ctx, sel.topic, mode, tasks)
	} else {
		revived, err = ops.ReviveAll(ctx, s, sel.topic, mode, state, span, time.Time{})
	}
	a.audited(s, change{cmd: cmd, changed: int64(len(revived)), bound: selectionBound(seqs, span),
		outcome: fmt.Sprintf("revived %d tasks of %q (%s)", len(revived), sel.topic, mode)}, err)
	if err != nil {
		return err
	}
	return a.reportChange("revived", sel.topic, int64(len(revived)))
}

// changeReport is the output of a command that changed tasks.
type changeReport struct {
	Topic string `json:"topic,omitempty"`
	Tasks int64  `json:"tasks"`
}

// reportChange says how many tasks a command changed.
func (a *app) reportChange(verb, topic string, n int64) error {
	if a.json {
		key := strings.ReplaceAll(verb, " ", "_") // "would purge": "would_purge"
		return a.printJSON(map[string]changeReport{key: {Topic: topic, Tasks: n}})
	}
	if topic == "" {
		a.printf("%s %d tasks\n", verb, n)
	} else {
		a.printf("%s %d tasks of %s\n", verb, n, topic)
	}
	return nil
}

func (a *app) reassignCommand() *cobra.Command {
	var sel selection
	var result string
	c := &cobra.Command{
		Use:   "reassign",
		Short: "Set the result of tasks that are no longer ACTIVE",
		Long: `reassign moves tasks to the state of another result: every task of a
state within a range of sequences, or the tasks named by --sequence (which
must be in EXPIRED to SUCCEEDED).`,
		Example: `  taskctl reassign -t orders --state expired --result failure
  taskctl reassign -t orders --sequence 1234 --result success`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.reassign(cmd, sel, result) },
	}
	sel.add(c, "reassign the tasks in this state")
	c.Flags().StringVarP(&result, "result", "r", "", "the new result: success, filter, suspension or failure (required)")
	return c
}

func (a *app) reassign(cmd *cobra.Command, sel selection, result string) error {
	if result == "" {
		return usagef("--result is required: success, filter, suspension or failure")
	}
	to, err := taskapi.ParseResult(result)
	if err != nil {
		return usagef("--result %q: %v", result, err)
	}
	state, span, seqs, err := sel.parse()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, sel.topic)
	if err != nil {
		return err
	}
	var tasks []taskapi.Task
	if len(seqs) > 0 {
		if tasks, err = ops.LookupTasks(ctx, s, sel.topic, seqs); err != nil {
			return err
		}
	}
	n, err := reassignTasks(ctx, s, sel.topic, state, to, span, tasks)
	a.audited(s, change{cmd: cmd, changed: n, bound: selectionBound(seqs, span),
		outcome: fmt.Sprintf("set %d tasks of %q to %s", n, sel.topic, to.State())}, err)
	if err != nil {
		return err
	}
	return a.reportChange("reassigned", sel.topic, n)
}

// reassignTasks sets tasks, or when none are given the tasks of topic in
// state within span, to the state of the result to, and returns how many.
func reassignTasks(ctx context.Context, s store, topic string, state taskapi.State, to taskapi.Result, span taskapi.Range, tasks []taskapi.Task) (int64, error) {
	if len(tasks) == 0 {
		return s.ReassignAll(ctx, topic, state, to, span)
	}
	assignments := make([]taskapi.Assignment, len(tasks))
	for i, t := range tasks {
		assignments[i] = taskapi.Assignment{Task: t, Result: to}
	}
	if err := s.Reassign(ctx, topic, assignments); err != nil {
		return 0, err
	}
	return int64(len(tasks)), nil
}

// selectionBound describes what bounds a change to a selection, for the
// audit log: the sequences named, or the range of sequences.
func selectionBound(seqs []int64, span taskapi.Range) string {
	switch {
	case len(seqs) > 0:
		return fmt.Sprintf("sequences %v", seqs)
	case span == taskapi.Unbounded:
		return "any sequence"
	case span.To == taskapi.MaxSequence:
		return fmt.Sprintf("sequences from %d on", span.From)
	case span.From == taskapi.Inception:
		return fmt.Sprintf("sequences up to %d", span.To)
	}
	return fmt.Sprintf("sequences %d to %d", span.From, span.To)
}
