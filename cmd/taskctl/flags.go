package main

import (
	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// topicFlag adds --topic/-t to cmd.
func topicFlag(cmd *cobra.Command, topic *string) {
	cmd.Flags().StringVarP(topic, "topic", "t", "", "the topic (required)")
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
