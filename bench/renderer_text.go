package main

import (
	"fmt"
	"strings"
)

// rendererOnly reports whether r holds the renderer's figures alone
// (--only renderer), which docs/tenants.md shows in the block "renderer"
// rather than in "table".
func rendererOnly(r *Report) bool {
	for _, f := range r.Figures {
		if !strings.HasPrefix(f.Key, "renderer_") {
			return false
		}
	}
	return len(r.Figures) > 0
}

// rendererText is the block "renderer" of the docs: a row per figure, with
// its bound where the issue set one, and how it was measured.
func rendererText(r *Report) string {
	var b strings.Builder
	b.WriteString("| figure | measured | bound |\n|---|---:|---:|\n")
	note := ""
	for _, f := range r.Figures {
		bound := ""
		switch {
		case f.Ceiling > 0:
			bound = fmt.Sprintf("≤ %s %s", number(&f.Ceiling), f.Unit)
		case f.Target > 0:
			bound = fmt.Sprintf("≥ %s%s", number(&f.Target), f.Unit)
		}
		value := number(f.Taskrepo) + " " + f.Unit
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.TrimPrefix(f.Name, "renderer: "), value, bound)
		if note == "" {
			note = f.Note
		}
	}
	date, _, _ := strings.Cut(r.Date, "T")
	fmt.Fprintf(&b, "\nMeasured on %s by `%s`: %s; %d vCPUs, %s.\n", date, r.Command, note, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2))
	return b.String()
}
