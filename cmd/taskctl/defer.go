package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

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
			at, err := ops.DeferUntil("--until", until, "--for", after, time.Now())
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

func (a *app) deferTasks(cmd *cobra.Command, topic string, until time.Time, seqs []int64, span taskapi.Range) error {
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, topic)
	if err != nil {
		return err
	}
	var d ops.Deferral
	if len(seqs) > 0 {
		var infos []taskapi.Info
		if infos, err = ops.LookupInfos(ctx, s, topic, seqs); err != nil {
			return err
		}
		// Named tasks are deferred all or none, as named (a task that is
		// not READY refuses the call), but for those due later already.
		tasks, later := ops.Movable(infos, until)
		if d.Later = later; len(tasks) > 0 {
			if err = s.Defer(ctx, topic, until, tasks); err == nil {
				d.Deferred = int64(len(tasks))
			}
		}
	} else {
		d, err = ops.DeferSpan(ctx, s, topic, until, span)
	}
	outcome := fmt.Sprintf("deferred %d tasks of %q until %s", d.Deferred, topic, until.UTC().Format(time.RFC3339))
	if d.Later > 0 {
		outcome += fmt.Sprintf("; left %d due later already", d.Later)
	}
	a.audited(s, change{cmd: cmd, changed: d.Deferred, bound: selectionBound(seqs, span), outcome: outcome}, err)
	if err != nil {
		return err
	}
	if d.Later > 0 && !a.json {
		a.printf("left %d tasks of %s as they were: due later than that already\n", d.Later, topic)
	}
	return a.reportChange("deferred", topic, d.Deferred)
}
