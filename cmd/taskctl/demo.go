package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// demo is what 'taskctl demo' was asked to do, and where it reports.
type demo struct {
	tasks     int           // --tasks: how many tasks the producers push in all
	consumers int           // --consumers: taskproc Clients, an owner each
	spread    time.Duration // --duration: how long the producers push
	timeout   time.Duration // --timeout: how long the tasks may take to settle after --duration
	app       *app          // the streams and --json
}

// The limits of the demo's flags.
const (
	demoMinTasks     = 20
	demoMaxTasks     = 1_000_000
	demoMaxConsumers = 16
)

// demoCommand is 'taskctl demo'.
func (a *app) demoCommand() *cobra.Command {
	d := &demo{app: a}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run producers and taskproc consumers on demo topics for a few seconds and sum up",
		Long:  demoLong(),
		Example: `  taskctl demo
  taskctl demo --tasks 20000 --consumers 4 --duration 10s
  taskctl demo --database postgres://postgres@127.0.0.1:5432/postgres
  taskctl demo --json | jq .latency`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := d.check(); err != nil {
				return err
			}
			s, _, _, err := a.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			return s.Demo(cmd.Context(), d)
		},
	}
	flags := c.Flags()
	flags.IntVarP(&d.tasks, "tasks", "n", 5000, "how many tasks to push in all, shared among the topics")
	flags.IntVarP(&d.consumers, "consumers", "c", 3, "how many consumers (taskproc Clients, an owner each) to run")
	flags.DurationVar(&d.spread, "duration", 5*time.Second, "how long the producers push")
	flags.DurationVar(&d.timeout, "timeout", time.Minute, "how long after --duration the tasks may take to settle before the demo gives up")
	return c
}

// demoLong is the long help of the command, which lists the demo topics.
func demoLong() string {
	var topics strings.Builder
	for _, t := range demoTopics {
		fmt.Fprintf(&topics, "  %-14s %s\n", t.name, t.shows)
	}
	return `demo shows taskrepo at work. With no --database it creates (or reuses) the
SQLite file taskrepo.db in the current directory and migrates it; it then
destroys and re-initializes its own topics, demo.*, and runs producers and
taskproc consumers (Clients, an owner each) at the same time:

` + topics.String() + `
It shows its progress on stderr (a bar on a terminal), waits until every
task has settled, stops the consumers and prints the tasks by state and
result, the throughput and the latency from a push's commit to the start
of its handler. On PostgreSQL the consumers wake up on notifications.
The topics stay afterwards for the other commands to look at.`
}

// check refuses flags out of their bounds.
func (d *demo) check() error {
	switch {
	case d.tasks < demoMinTasks || d.tasks > demoMaxTasks:
		return usagef("--tasks %d: give %d to %d", d.tasks, demoMinTasks, demoMaxTasks)
	case d.consumers < 1 || d.consumers > demoMaxConsumers:
		return usagef("--consumers %d: give 1 to %d", d.consumers, demoMaxConsumers)
	case d.spread < 0 || d.spread > time.Hour:
		return usagef("--duration %v: give 0s to 1h", d.spread)
	case d.timeout <= 0:
		return usagef("--timeout %v: give a positive duration such as 60s", d.timeout)
	}
	return nil
}

// Demo runs the demo on this database.
func (b *backend[Tx]) Demo(ctx context.Context, d *demo) error {
	return newDemoRun(b, d).run(ctx)
}
