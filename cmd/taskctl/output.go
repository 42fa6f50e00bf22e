package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"golang.org/x/term"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorful reports whether output to w may carry colour: a terminal, and
// no NO_COLOR in the environment.
func colorful(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printf writes a line of text for people.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// stateColors are the colours of the state names on a terminal.
var stateColors = map[string]string{
	"ACTIVE": "12", "READY": "14", "EXPIRED": "11", "FAILED": "9", "FAILURE": "9",
	"SUSPENDED": "13", "SUSPENSION": "13", "FILTERED": "8", "FILTER": "8",
	"SUCCEEDED": "10", "SUCCESS": "10", "RECREATED": "8", "REDUNDANT": "8",
	"RUNNING": "10", "PAUSED": "11", "DRAINING": "13",
}

// printTable writes an aligned table with a header row. On a terminal the
// header is bold and state names are coloured.
func (a *app) printTable(headers []string, rows [][]string) {
	fmt.Fprintln(a.stdout, renderTable(headers, rows, colorful(a.stdout)))
}

// renderTable renders an aligned table without borders.
func renderTable(headers []string, rows [][]string, color bool) string {
	cell := lipgloss.NewStyle().PaddingRight(2)
	t := table.New().Headers(headers...).Rows(rows...).
		Border(lipgloss.HiddenBorder()).BorderTop(false).BorderBottom(false).
		BorderLeft(false).BorderRight(false).BorderColumn(false).BorderHeader(false).
		StyleFunc(func(row, col int) lipgloss.Style {
			if !color {
				return cell
			}
			if row == table.HeaderRow {
				return cell.Bold(true)
			}
			if c, ok := stateColors[rows[row][col]]; ok {
				return cell.Foreground(lipgloss.Color(c))
			}
			return cell
		})
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// ago says how long before now t was, or how long after: "4s ago",
// "in 2m"; "-" for the zero time.
func ago(t, now time.Time) string { return ops.Ago(t, now, roughly) }

// roughly writes d in its largest unit: 850ms, 12s, 5m, 3h, 2d.
func roughly(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// clip shortens s to n characters for a table cell, marking the cut.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// taskJSON is a task as --json prints it.
type taskJSON struct {
	Topic      string     `json:"topic"`
	Sequence   int64      `json:"sequence"`
	Identifier string     `json:"identifier"`
	State      string     `json:"state"`
	Descent    string     `json:"descent"`
	Owner      string     `json:"owner,omitempty"`
	Reference  string     `json:"reference,omitempty"`
	Input      string     `json:"input,omitempty"`
	Output     string     `json:"output,omitempty"`
	Created    time.Time  `json:"created"`
	Completed  *time.Time `json:"completed,omitempty"`
	NotBefore  *time.Time `json:"not_before,omitempty"`
	Revivals   int        `json:"revivals"`
}

func toJSON(topic string, info taskapi.Info) taskJSON {
	return taskJSON{
		Topic: topic, Sequence: info.Sequence, Identifier: info.Identifier,
		State: info.State.String(), Descent: info.Descent.String(), Owner: info.Owner,
		Reference: info.Reference, Input: info.Input, Output: info.Output,
		Created: info.Created, Completed: optionalTime(info.Completed),
		NotBefore: optionalTime(info.NotBefore), Revivals: info.Revivals,
	}
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
