package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Every command that changes something records it in the database's
// audit log (taskapi.Auditor) through audited, once it ran: topic init,
// destroy, pause, resume, drain, capacity and limits; revive, reassign, defer, cancel and purge;
// owners purge and expire. Reads and pushes (the producers' work) record
// nothing.

// cliOrigin is the origin of taskctl's entries.
const cliOrigin = "cli"

// change is what a changing command did, for the audit log.
type change struct {
	cmd     *cobra.Command
	topics  []string       // the topics named as arguments, if any
	args    map[string]any // the other arguments that are parameters (capacity's N, limits' flags), by name
	bound   string         // what bounded the change: the sequences confirmed, say
	changed int64          // tasks changed, or topics, or owners
	outcome string         // what it said it did
}

// unrecorded are the flags that are not the action's parameters.
var unrecorded = map[string]bool{"yes": true, "database": true, "read-database": true, "json": true, "help": true}

// audited records c in the audit log as an action of the OS user, named
// by its command ("topic pause", "purge"), with the flags given as its
// parameters, and err when the command stopped on one after it changed
// something; a command that failed having changed nothing records
// nothing, as bad input changes nothing. The change stands
// whatever becomes of the record: a record that fails is said on stderr
// and does not change the exit code, so that a script does not run the
// change again.
func (a *app) audited(s store, c change, err error) {
	if err != nil && c.changed == 0 {
		return
	}
	entry := taskapi.AuditEntry{Actor: osUser(), Origin: cliOrigin, Action: strings.TrimPrefix(c.cmd.CommandPath(), "taskctl "),
		Params: changeParams(c), Bound: c.bound, Changed: c.changed, Outcome: c.outcome}
	if err != nil {
		entry.Outcome = strings.TrimSpace(fmt.Sprintf("%s (stopped: %v)", entry.Outcome, err))
	}
	// The change is made: record it even when the command was interrupted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.cmd.Context()), 10*time.Second)
	defer cancel()
	if _, err := s.Record(ctx, entry); err != nil {
		fmt.Fprintf(a.stderr, "taskctl: the change stands, but its audit record failed: %v\n", err)
	}
}

// changeParams writes the topics, the other arguments and the flags
// given to c's command as a JSON object: lists for the topics and the
// flags that take several values, the arguments by value, strings for the
// other flags.
func changeParams(c change) string {
	params := map[string]any{}
	if len(c.topics) > 0 {
		params["topic"] = c.topics
	}
	maps.Copy(params, c.args)
	c.cmd.Flags().Visit(func(f *pflag.Flag) {
		// An argument read from a flag (limits' --active) is recorded as
		// the value it was read as, not as the text given.
		if _, read := c.args[f.Name]; read || unrecorded[f.Name] {
			return
		}
		if list, ok := f.Value.(pflag.SliceValue); ok {
			params[f.Name] = list.GetSlice()
			return
		}
		params[f.Name] = f.Value.String()
	})
	if len(params) == 0 {
		return ""
	}
	b, _ := json.Marshal(params)
	return string(b)
}

// osUser names the user of the operating system that runs taskctl.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	for _, env := range []string{"USER", "USERNAME", "LOGNAME"} {
		if name := os.Getenv(env); name != "" {
			return name
		}
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// auditJSON is an entry as --json prints it.
type auditJSON struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"at"`
	Actor   string          `json:"actor"`
	Origin  string          `json:"origin"`
	Action  string          `json:"action"`
	Params  json.RawMessage `json:"params,omitempty"`
	Bound   string          `json:"bound,omitempty"`
	Changed int64           `json:"changed"`
	Outcome string          `json:"outcome,omitempty"`
}

func (a *app) auditCommand() *cobra.Command {
	var (
		before int64
		limit  int
	)
	c := &cobra.Command{
		Use:   "audit",
		Short: "List the audit log of the actions, newest first",
		Long: `audit lists the actions recorded in the database, from taskctl's commands and
from its dashboard, newest first: who (the OS user, or the dashboard's
session), from where, what with which parameters and bound, how many tasks
(topics, owners) it changed, and when. Page on with --before and the last
number shown. Reads are not recorded.`,
		Example: `  taskctl audit
  taskctl audit --limit 20 --before 1200
  taskctl audit --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > taskapi.MaxAuditPage {
				return usagef("--limit %d: give 1 to %d", limit, taskapi.MaxAuditPage)
			}
			if before < 0 {
				return usagef("--before %d: give an entry's number", before)
			}
			s, err := a.openReads(cmd.Context())
			if err != nil {
				return err
			}
			entries, err := s.AuditLog(cmd.Context(), before, limit)
			if err != nil {
				return err
			}
			return a.printAudit(entries, limit)
		},
	}
	c.Flags().Int64Var(&before, "before", 0, "entries before this number (the next page)")
	c.Flags().IntVarP(&limit, "limit", "n", 50, fmt.Sprintf("entries per page (1 to %d)", taskapi.MaxAuditPage))
	return c
}

// printAudit prints a page of the audit log.
func (a *app) printAudit(entries []taskapi.AuditEntry, limit int) error {
	if a.json {
		out := make([]auditJSON, len(entries))
		for i, e := range entries {
			out[i] = auditJSON{ID: e.ID, At: e.At, Actor: e.Actor, Origin: e.Origin, Action: e.Action,
				Bound: e.Bound, Changed: e.Changed, Outcome: e.Outcome}
			if e.Params != "" && json.Valid([]byte(e.Params)) {
				out[i].Params = json.RawMessage(e.Params)
			}
		}
		return a.printJSON(map[string]any{"entries": out})
	}
	if len(entries) == 0 {
		a.printf("no action recorded\n")
		return nil
	}
	cells := make([][]string, len(entries))
	for i, e := range entries {
		cells[i] = []string{strconv.FormatInt(e.ID, 10), e.At.UTC().Format("2006-01-02 15:04:05"), auditCell(e.Actor, 24),
			auditCell(e.Origin, 12), auditCell(e.Action, 16), auditCell(e.Params, 48), auditCell(e.Bound, 32),
			strconv.FormatInt(e.Changed, 10), auditCell(e.Outcome, 48)}
	}
	a.printTable([]string{"#", "WHEN (UTC)", "WHO", "FROM", "ACTION", "PARAMETERS", "BOUND", "CHANGED", "OUTCOME"}, cells)
	if len(entries) == limit {
		a.printf("older: taskctl audit --before %d\n", entries[len(entries)-1].ID)
	}
	return nil
}

// auditCell clips text for a table cell, as clip does, and shows the
// format characters (bidirectional controls, zero-width ones) as "?", so
// that no entry reorders or hides what the terminal shows.
func auditCell(text string, n int) string {
	return output.Clip(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return '?'
		}
		return r
	}, text), n)
}
