package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// purgeChunks is how many statements a purge is cut into at most, so that
// progress shows and no statement holds its locks for long.
const purgeChunks = 100

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
state, FAILED to REDUNDANT) within --from/--to, created before a time
(--before TIMESTAMP, --older-than DURATION). It counts them first: --dry-run
prints that count and changes nothing; on a terminal it asks before it
deletes, unless --yes; without a terminal it needs --yes.

A time is resolved to the sequence of the first task created after it:
every task below that sequence goes. A task created just before the time
by a transaction that committed after a later one stays (the next purge
takes it).`,
		Example: `  taskctl purge -t orders --older-than 720h --dry-run
  taskctl purge -t orders --before 2026-11-01 --yes
  taskctl purge -t orders --state succeeded,redundant --to 100000 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.purge(cmd, f) },
	}
	topicFlag(c, &f.topic)
	c.Flags().StringSliceVarP(&f.states, "state", "s", nil, "only these states (default FAILED to REDUNDANT)")
	c.Flags().StringVar(&f.before, "before", "", "only tasks created before this time")
	c.Flags().StringVar(&f.olderThan, "older-than", "", "only tasks created longer ago than this (720h)")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print how many tasks would go, and change nothing")
	c.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	f.span.add(c)
	return c
}

// cutoff reads --before or --older-than; the zero time when neither.
func (f purgeFlags) cutoff(now time.Time) (time.Time, error) {
	switch {
	case f.before != "" && f.olderThan != "":
		return time.Time{}, usagef("give --before or --older-than, not both")
	case f.olderThan != "":
		d, err := parseDuration("--older-than", f.olderThan)
		return now.Add(-d), err
	case f.before != "":
		if t, ok := parseTimestamp(f.before); ok {
			return t, nil
		}
		return time.Time{}, usagef("--before %q is not a time such as 2026-11-01 or 2026-11-01T10:00:00Z", f.before)
	}
	return time.Time{}, nil
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
	cutoff, err := f.cutoff(time.Now())
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, f.topic)
	if err != nil {
		return err
	}
	if span, err = beforeTime(ctx, s, span, cutoff); err != nil {
		return err
	}
	n, first, last, err := purgeable(ctx, s, f.topic, span, states)
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
	purged, err := a.purgeChunked(ctx, s, f.topic, taskapi.Range{From: first, To: last}, states, n)
	if err != nil {
		return fmt.Errorf("after %d tasks were purged: %w", purged, err)
	}
	return a.reportChange("purged", f.topic, purged)
}

// beforeTime narrows span to the tasks below the first one created after
// cutoff; a zero cutoff leaves it.
func beforeTime(ctx context.Context, s store, span taskapi.Range, cutoff time.Time) (taskapi.Range, error) {
	if cutoff.IsZero() {
		return span, nil
	}
	next, err := s.Resolve(ctx, cutoff.Add(time.Microsecond), false)
	if err != nil {
		return span, err
	}
	span.To = min(span.To, next-1)
	return span, nil
}

// purgeable counts the tasks a purge would delete and returns the lowest
// and highest of their sequences.
func purgeable(ctx context.Context, s store, topic string, span taskapi.Range, states []taskapi.State) (n, first, last int64, err error) {
	if span.Empty() {
		return 0, 0, 0, nil
	}
	if len(states) == 0 {
		states = []taskapi.State{taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant}
	}
	counts, err := s.Count(ctx, taskapi.Total, taskapi.Counting{Topic: topic, States: states}, span)
	if err != nil || len(counts[topic]) == 0 {
		return 0, 0, 0, err
	}
	for _, sum := range counts[topic] {
		n, last = n+sum.Count, max(last, sum.Bound)
	}
	page, err := s.Page(ctx, topic, taskapi.Listing{States: states}, max(span.From-1, taskapi.Inception), 1, taskapi.Forward)
	if err != nil || len(page) == 0 {
		return n, 0, 0, err
	}
	return n, page[0].Sequence, last, nil
}

// purgeChunked purges span in up to purgeChunks statements, showing
// progress against the n tasks counted.
func (a *app) purgeChunked(ctx context.Context, s store, topic string, span taskapi.Range, states []taskapi.State, n int64) (int64, error) {
	bar := a.progress(n, "purging")
	defer bar.done()
	width := max((span.To-span.From)/purgeChunks+1, 1)
	var purged int64
	for from := span.From; from <= span.To; from += width {
		chunk := taskapi.Range{From: from, To: min(from+width-1, span.To)}
		k, err := s.Purge(ctx, topic, chunk, states)
		purged += k
		if err != nil {
			return purged, err
		}
		bar.add(int(k))
		if chunk.To == span.To {
			break
		}
	}
	return purged, nil
}
