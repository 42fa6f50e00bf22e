package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/top"
)

// topFlags are the flags of top as given on the command line.
type topFlags struct {
	interval, window, within string
	once                     bool
}

// topCommand returns 'taskctl top', the live view of every topic.
func (a *app) topCommand() *cobra.Command {
	var f topFlags
	c := &cobra.Command{
		Use:   "top",
		Short: "Watch every topic live: tasks per state, throughput, wait, owners",
		Long: `top shows every topic of the database, one line each, and reads them again
every --interval until you press q (or ctrl+c, or esc):

  TOPIC       the topic
  ACTIVATION  RUNNING, PAUSED or DRAINING (see 'taskctl topic pause')
  READY, ACTIVE, EXPIRED, FAILED, SUSPENDED, SUCCEEDED, CANCELLED
              how many tasks are in each state now
  OTHER       the FILTERED, RECREATED and REDUNDANT tasks together
  DONE/S      tasks completed per second over the last --window
  PUSHED/S    tasks created per second over the last --window (pushes, and
              revivals that push a new task; tasks purged since do not count)
  WAIT        how long the READY task that a FIFO poll takes next has waited,
              since it was pushed, or since its not-before time if it was
              deferred: the push-to-start latency of the next start. The
              database does not record when a task started, so this is the
              only latency top can show. Deferred tasks not yet due are skipped
              (among the first 100 READY tasks); "-" when no READY task is due.

Below the table come the owners (consumer processes) that are alive: with a
heartbeat within --within. A reading that fails (the database is gone, say)
shows its error, and top tries again at the next interval. Times on the
database are compared with this machine's clock.

When the output is not a terminal, or with --once, top prints one reading as
a table and exits; with --json it prints one reading as JSON.`,
		Example: `  taskctl top
  taskctl top --interval 500ms --window 1m
  taskctl top --once
  taskctl top --json | jq '.topics[] | {topic, ready: .states.READY}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.top(cmd.Context(), f) },
	}
	c.Flags().StringVar(&f.interval, "interval", "2s", "how often to read the database again (at least 100ms)")
	c.Flags().StringVar(&f.window, "window", "10s", "the time over which DONE/S and PUSHED/S are counted")
	c.Flags().StringVar(&f.within, "within", "30s", "an owner is alive if its last heartbeat is this recent")
	c.Flags().BoolVar(&f.once, "once", false, "print one reading and exit, even on a terminal")
	return c
}

// config checks the flags and returns what top reads and how often.
func (f topFlags) config() (top.Config, error) {
	var cfg top.Config
	var err error
	if cfg.Interval, err = parseDuration("--interval", f.interval); err != nil {
		return cfg, err
	}
	if cfg.Interval < top.MinInterval {
		return cfg, usagef("--interval %s is too short: top reads the database at most every %s", f.interval, top.MinInterval)
	}
	if cfg.Window, err = parseDuration("--window", f.window); err != nil {
		return cfg, err
	}
	if cfg.Window < time.Second {
		return cfg, usagef("--window %s is too short: give at least 1s", f.window)
	}
	if cfg.Within, err = parseDuration("--within", f.within); err != nil {
		return cfg, err
	}
	if cfg.Within <= 0 {
		return cfg, usagef("--within %s: give a duration above zero, such as 30s", f.within)
	}
	return cfg, nil
}

// top runs the command: one reading when the output is for a script, the
// live view on a terminal.
func (a *app) top(ctx context.Context, f topFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	s, err := a.openReads(ctx)
	if err != nil {
		return err
	}
	if a.json || f.once || !output.IsTerminal(a.stdout) {
		return top.Once(ctx, s, cfg, a.stdout, a.json)
	}
	return top.Live(ctx, s, cfg, a.stdin, a.stdout)
}
