package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// purgeFlags are purge's flags.
type purgeFlags struct {
	topic, before, olderThan string
	states                   []string
	span                     spanFlags
	dryRun, yes              bool
}

func (a *app) purgeCommand() *cobra.Command {
	var f purgeFlags
	c := &cobra.Command{
		Use:   "purge",
		Short: "Delete finished tasks by sequence range, by time or by state",
		Long: `purge deletes a topic's tasks in the given states (default: every finished
state, FAILED to CANCELLED) within --from/--to, created before a time
(--before TIMESTAMP, --older-than DURATION). It counts them first: --dry-run
prints that count and changes nothing; on a terminal it asks before it
deletes, unless --yes; without a terminal it needs --yes.

A time is resolved to the sequence of the topic's first task created
after it: every task of the topic below that sequence goes. A task created just before the time
by a transaction that committed after a later one stays (the next purge
takes it).`,
		Example: `  taskctl purge -t orders --older-than 720h --dry-run
  taskctl purge -t orders --before 2026-11-01 --yes
  taskctl purge -t orders --state succeeded,redundant --to 100000 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.purge(cmd, f) },
	}
	topicFlag(c, &f.topic)
	c.Flags().StringSliceVarP(&f.states, "state", "s", nil, "only these states (default FAILED to CANCELLED)")
	c.Flags().StringVar(&f.before, "before", "", "only tasks created before this time")
	c.Flags().StringVar(&f.olderThan, "older-than", "", "only tasks created longer ago than this (720h)")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print how many tasks would go, and change nothing")
	c.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	f.span.add(c)
	return c
}

func (a *app) purge(cmd *cobra.Command, f purgeFlags) error {
	states, err := parseStates(f.states)
	if err != nil {
		return err
	}
	span, err := f.span.span()
	if err != nil {
		return err
	}
	cutoff, err := ops.Cutoff("--before", f.before, "--older-than", f.olderThan, time.Now())
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, f.topic)
	if err != nil {
		return err
	}
	if span, err = ops.Before(ctx, s, f.topic, span, cutoff); err != nil {
		return err
	}
	// What is counted now is what is purged after the question: tasks
	// completed while it is asked stay (taskapi.CompletionBounded).
	completedBy, err := s.Now(ctx)
	if err != nil {
		return err
	}
	n, first, last, err := ops.Purgeable(ctx, s, f.topic, span, states)
	if err != nil {
		return err
	}
	if f.dryRun {
		return a.reportChange("would purge", f.topic, n)
	}
	if n == 0 {
		return a.reportChange("purged", f.topic, 0)
	}
	if err := a.confirm(ctx, f.yes, "Purge %d tasks of %s (sequences %d to %d)?", n, f.topic, first, last); err != nil {
		return err
	}
	purged, err := a.purgeChunked(ctx, s, f.topic, taskapi.Range{From: first, To: last}, states, completedBy, n)
	a.audited(s, change{cmd: cmd, changed: purged, bound: fmt.Sprintf("sequences %d to %d, %d tasks confirmed", first, last, n),
		outcome: fmt.Sprintf("purged %d tasks of %q", purged, f.topic)}, err)
	if err != nil {
		return fmt.Errorf("after %d tasks were purged: %w", purged, err)
	}
	return a.reportChange("purged", f.topic, purged)
}

// purgeChunked purges span in up to ops.PurgeChunks statements, showing
// progress against the n tasks counted.
func (a *app) purgeChunked(ctx context.Context, s store, topic string, span taskapi.Range, states []taskapi.State, completedBy time.Time, n int64) (int64, error) {
	bar := a.progress(n, "purging")
	defer bar.done()
	return ops.PurgeChunked(ctx, s, topic, span, states, completedBy, n, func(k int64) { bar.add(int(k)) })
}
