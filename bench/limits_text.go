package main

import (
	"fmt"
	"strings"
)

// Limits is what the limits scenario measured (limits.go): the time of a
// poll beside one tenant's backlog, by repository and limits.
type Limits struct {
	Hot      int         `json:"hot_tasks"`
	Quiet    int         `json:"quiet_tenants"`
	PerQuiet int         `json:"tasks_per_quiet_tenant"`
	Size     int         `json:"poll_size"`
	Polls    int         `json:"polls"`
	Runs     []LimitsRun `json:"runs"`
}

// LimitsRun is one repository's polls under one kind of limits.
type LimitsRun struct {
	Repository string  `json:"repository"`
	Limits     string  `json:"limits"`
	MedianMS   float64 `json:"median_ms"`
	P99MS      float64 `json:"p99_ms"`
	Ratio      float64 `json:"ratio,omitempty"` // median ÷ the median without limits of the same repository
}

// limitsDescriptions say what each run's limits are.
var limitsDescriptions = map[string]string{
	"none":   "none",
	"active": "`Limits{Active: 50}`",
	"keyed":  "`Limits{Active: 50, PerIdentifier: 2}`",
}

// limitsText is the block "limits" of the docs: a row per run, and how
// they were measured.
func limitsText(r *Report) string {
	l := r.Limits
	var b strings.Builder
	b.WriteString("| repository | limits | poll, median | p99 | median ÷ without limits |\n|---|---|---:|---:|---:|\n")
	for _, run := range l.Runs {
		ratio := ""
		if run.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", run.Ratio)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f ms | %.2f ms | %s |\n", run.Repository, limitsDescriptions[run.Limits], run.MedianMS, run.P99MS, ratio)
	}
	date, _, _ := strings.Cut(r.Date, "T")
	fmt.Fprintf(&b, "\nMeasured on %s by `%s`: %d polls of %d, each in a transaction timed up to its commit and completed before the next, "+
		"beside one tenant's %d Ready tasks and %d quiet tenants of %d, with fresh statistics and the server's default jit = on; %d vCPUs, %s.\n",
		date, r.Command, l.Polls, l.Size, l.Hot, l.Quiet, l.PerQuiet, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2))
	return b.String()
}
