package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
)

// forever is a window that holds every heartbeat: Owners within it lists
// every other owner.
const forever = 100 * 365 * 24 * time.Hour

func (a *app) ownersCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "owners",
		Short: "List the owners (consumer processes) and purge silent ones",
		Example: `  taskctl owners list
  taskctl owners list --within 10s --json
  taskctl owners purge --after 24h`,
	}
	c.AddCommand(a.ownersListCommand(), a.ownersPurgeCommand())
	return c
}

func (a *app) ownersListCommand() *cobra.Command {
	var within string
	c := &cobra.Command{
		Use:   "list",
		Short: "List every owner, alive (a heartbeat within --within) or silent",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseDuration("--within", within)
			if err != nil {
				return err
			}
			s, err := a.openReads(cmd.Context())
			if err != nil {
				return err
			}
			all, err := s.Owners(cmd.Context(), forever)
			if err != nil {
				return err
			}
			alive, err := s.Owners(cmd.Context(), d)
			if err != nil {
				return err
			}
			return a.printOwners(all, alive)
		},
	}
	c.Flags().StringVar(&within, "within", "30s", "an owner is alive if its last heartbeat is this recent")
	return c
}

// ownerRow is one owner as owners list prints it.
type ownerRow struct {
	Owner string `json:"owner"`
	Alive bool   `json:"alive"`
}

func (a *app) printOwners(all, alive []string) error {
	rows := make([]ownerRow, len(all))
	cells := make([][]string, len(all))
	for i, o := range all {
		rows[i] = ownerRow{Owner: o, Alive: slices.Contains(alive, o)}
		status := "SILENT"
		if rows[i].Alive {
			status = "ALIVE"
		}
		cells[i] = []string{output.Clip(o, 80), status}
	}
	if a.json {
		return a.printJSON(rows)
	}
	if len(rows) == 0 {
		a.printf("no owners\n")
		return nil
	}
	a.printTable([]string{"OWNER", "STATUS"}, cells)
	return nil
}

func (a *app) ownersPurgeCommand() *cobra.Command {
	return a.silentCommand(&cobra.Command{
		Use:   "purge",
		Short: "Delete owners silent for longer than --after that hold no ACTIVE task",
	}, "24h", func(cmd *cobra.Command, s store, d time.Duration) error {
		n, err := s.PurgeOwners(cmd.Context(), d)
		a.audited(s, change{cmd: cmd, changed: n, outcome: fmt.Sprintf("purged %d owners silent for longer than %s", n, d)}, err)
		if err != nil {
			return err
		}
		if a.json {
			return a.printJSON(map[string]int64{"purged_owners": n})
		}
		a.printf("purged %d owners\n", n)
		return nil
	})
}

func (a *app) expireCommand() *cobra.Command {
	return a.silentCommand(&cobra.Command{
		Use:   "expire",
		Short: "Mark EXPIRED the ACTIVE tasks of owners silent for longer than --after",
		Long: `expire marks EXPIRED every ACTIVE task whose owner sent no heartbeat for
longer than --after, so that 'taskctl revive --state expired' (or a
keeper with revival) brings them back. Choose --after well above the
owners' heartbeat interval: an owner that is only slow loses its tasks.`,
		Example: `  taskctl expire --after 1m
  taskctl revive -t orders --state expired`,
	}, "1m", func(cmd *cobra.Command, s store, d time.Duration) error {
		n, err := s.Expire(cmd.Context(), d)
		a.audited(s, change{cmd: cmd, changed: n, outcome: fmt.Sprintf("expired %d tasks of owners silent for longer than %s", n, d)}, err)
		if err != nil {
			return err
		}
		return a.reportChange("expired", "", n)
	})
}

// silentCommand completes c, a command on the owners silent for longer
// than its required --after flag (example: a fitting value), to run act.
func (a *app) silentCommand(c *cobra.Command, example string, act func(cmd *cobra.Command, s store, after time.Duration) error) *cobra.Command {
	var after string
	c.Args = cobra.NoArgs
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		if after == "" {
			return usagef("--after is required: how long an owner must have been silent (%s)", example)
		}
		d, err := parseDuration("--after", after)
		if err != nil {
			return err
		}
		s, err := a.open(cmd.Context())
		if err != nil {
			return err
		}
		return act(cmd, s, d)
	}
	c.Flags().StringVar(&after, "after", "", "silent for longer than this (required)")
	return c
}
