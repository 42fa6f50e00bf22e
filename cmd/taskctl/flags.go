package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// topicFlag adds --topic/-t to cmd.
func topicFlag(cmd *cobra.Command, topic *string) {
	cmd.Flags().StringVarP(topic, "topic", "t", "", "the topic (required)")
}

// parseStates reads state names, comma-separated or repeated ("failed,expired").
func parseStates(values []string) ([]taskapi.State, error) {
	var states []taskapi.State
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			s, err := taskapi.ParseState(name)
			if err != nil {
				return nil, usagef("--state %q: %v (states: %s)", name, err, stateNames())
			}
			states = append(states, s)
		}
	}
	return states, nil
}

// stateNames lists every state's name for error messages.
func stateNames() string {
	var names []string
	for s := taskapi.Active; s <= taskapi.Redundant; s++ {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// parseSequences reads sequences, comma-separated or repeated.
func parseSequences(values []string) ([]int64, error) {
	var seqs []int64
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n <= 0 {
				return nil, usagef("sequence %q is not a positive whole number", f)
			}
			seqs = append(seqs, n)
		}
	}
	return seqs, nil
}

// spanFlags are --from and --to: an inclusive range of sequences.
type spanFlags struct{ from, to int64 }

func (f *spanFlags) add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&f.from, "from", 0, "the lowest sequence (default: the first)")
	cmd.Flags().Int64Var(&f.to, "to", 0, "the highest sequence (default: the last)")
}

// span returns the range, Unbounded when neither flag was given.
func (f *spanFlags) span() (taskapi.Range, error) {
	r := taskapi.Unbounded
	if f.from < 0 || f.to < 0 {
		return r, usagef("--from and --to are sequences: positive whole numbers")
	}
	if f.from > 0 {
		r.From = f.from
	}
	if f.to > 0 {
		r.To = f.to
	}
	if r.From > r.To {
		return r, usagef("--from %d is after --to %d", r.From, r.To)
	}
	return r, nil
}

// lookupTasks finds the tasks of topic with the given sequences; an
// unknown sequence is an error that names it.
func lookupTasks(ctx context.Context, s store, topic string, seqs []int64) ([]taskapi.Task, error) {
	tasks := make([]taskapi.Task, 0, len(seqs))
	for _, seq := range seqs {
		info, ok, err := s.Lookup(ctx, topic, seq)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, notFoundf("topic %q has no task %d", topic, seq)
		}
		tasks = append(tasks, info.Task)
	}
	return tasks, nil
}
