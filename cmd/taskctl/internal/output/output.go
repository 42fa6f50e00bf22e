// Package output writes what taskctl shows people: aligned tables whose
// state names are coloured on a terminal, indented JSON, and cells clipped
// to a width with their control characters blanked. The commands, the demo
// and top share it.
package output

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
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Colorful reports whether output to w may carry colour: a terminal, and
// no NO_COLOR in the environment.
func Colorful(w io.Writer) bool {
	return IsTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// JSON writes v to w as indented JSON.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stateColors are the colours of the state names on a terminal.
var stateColors = map[string]string{
	"ACTIVE": "12", "READY": "14", "EXPIRED": "11", "FAILED": "9", "FAILURE": "9",
	"SUSPENDED": "13", "SUSPENSION": "13", "FILTERED": "8", "FILTER": "8",
	"SUCCEEDED": "10", "SUCCESS": "10", "RECREATED": "8", "REDUNDANT": "8", "CANCELLED": "5",
	"RUNNING": "10", "PAUSED": "11", "DRAINING": "13",
}

// Table writes an aligned table with a header row to w. On a terminal the
// header is bold and state names are coloured.
func Table(w io.Writer, headers []string, rows [][]string) {
	fmt.Fprintln(w, RenderTable(headers, rows, Colorful(w)))
}

// RenderTable renders an aligned table without borders.
func RenderTable(headers []string, rows [][]string, color bool) string {
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

// Roughly writes d in its largest unit: 850ms, 12s, 5m, 3h, 2d.
func Roughly(d time.Duration) string {
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

// Clip shortens s to n characters for a table cell, marking the cut, and
// blanks its control characters.
func Clip(s string, n int) string {
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
