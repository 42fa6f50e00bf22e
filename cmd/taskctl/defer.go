package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// deferBatch is how many tasks one transaction of defer defers.
const deferBatch = 1000

func (a *app) deferCommand() *cobra.Command {
	var topic, until, after string
	var sequences []string
	var span spanFlags
	c := &cobra.Command{
		Use:   "defer",
		Short: "Hold READY tasks back until a time",
		Long: `defer sets the not-before time of READY tasks: consumers poll them no
earlier. It takes the tasks named by --sequence, or every READY task within
--from/--to. --until now makes deferred tasks pollable at once.`,
		Example: `  taskctl defer -t orders --sequence 1234,1235 --for 30m
  taskctl defer -t orders --from 1000 --to 2000 --until 2026-11-25T06:00:00Z
  taskctl defer -t orders --sequence 1234 --until now`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			at, err := deferUntil(until, after, time.Now())
			if err != nil {
				return err
			}
			seqs, err := parseSequences(sequences)
			if err != nil {
				return err
			}
			r, err := span.span()
			if err != nil {
				return err
			}
			if len(seqs) > 0 && r != taskapi.Unbounded {
				return usagef("give --sequence or --from/--to, not both")
			}
			return a.deferTasks(cmd, topic, at, seqs, r)
		},
	}
	topicFlag(c, &topic)
	c.Flags().StringVar(&until, "until", "", "the time before which the tasks are not polled, or now")
	c.Flags().StringVar(&after, "for", "", "defer by this long from now (30m)")
	c.Flags().StringSliceVar(&sequences, "sequence", nil, "these tasks (comma-separated sequences)")
	span.add(c)
	return c
}

// deferUntil reads --until or --for; the zero time means "at once".
func deferUntil(until, after string, now time.Time) (time.Time, error) {
	switch {
	case until != "" && after != "":
		return time.Time{}, usagef("give --until or --for, not both")
	case after != "":
		d, err := parseDuration("--for", after)
		return now.Add(d), err
	case until == "now":
		return time.Time{}, nil
	case until != "":
		if t, ok := parseTimestamp(until); ok {
			return t, nil
		}
		return time.Time{}, usagef("--until %q is not a time such as 2026-11-25T06:00:00Z, or now", until)
	}
	return time.Time{}, usagef("say until when: --until TIME or --for DURATION")
}

func (a *app) deferTasks(cmd *cobra.Command, topic string, until time.Time, seqs []int64, span taskapi.Range) error {
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, topic)
	if err != nil {
		return err
	}
	if len(seqs) > 0 {
		tasks, err := lookupTasks(ctx, s, topic, seqs)
		if err == nil {
			err = s.Defer(ctx, topic, until, tasks)
		}
		if err != nil {
			return err
		}
		return a.reportChange("deferred", topic, int64(len(tasks)))
	}
	var n int64
	ready := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
	for cursor := span.From - 1; ; {
		infos, err := s.Page(ctx, topic, ready, max(cursor, taskapi.Inception), deferBatch, taskapi.Forward)
		if err != nil {
			return err
		}
		tasks := make([]taskapi.Task, 0, len(infos))
		for _, info := range infos {
			if info.Sequence <= span.To {
				tasks = append(tasks, info.Task)
			}
		}
		done, err := deferReady(ctx, s, topic, until, tasks)
		if err != nil {
			return err
		}
		n += int64(done)
		if len(tasks) < deferBatch {
			return a.reportChange("deferred", topic, n)
		}
		cursor = tasks[len(tasks)-1].Sequence
	}
}

// deferReady defers tasks that were READY when paged, leaving out those a
// consumer claimed meanwhile (the StateError names them), and returns how
// many it deferred.
func deferReady(ctx context.Context, s store, topic string, until time.Time, tasks []taskapi.Task) (int, error) {
	for len(tasks) > 0 {
		err := s.Defer(ctx, topic, until, tasks)
		var stateErr *taskapi.StateError
		if !errors.As(err, &stateErr) {
			return len(tasks), err
		}
		before := len(tasks)
		tasks = slices.DeleteFunc(tasks, func(t taskapi.Task) bool {
			return slices.Contains(stateErr.Sequences, t.Sequence)
		})
		if len(tasks) == before {
			return 0, err
		}
	}
	return 0, nil
}
