package main

import (
	"fmt"
	"slices"
	"strings"
)

// AutoFailover is what faults' TestAutoFailoverLosesNothingCommitted
// measured under pg_auto_failover (a monitor and two nodes of the test's
// own), written when TASK_TEST_AUTOFAILOVER_RESULTS names a file
// (results/autofailover_tuned.json, results/autofailover_defaults.json).
// Its rounds alternate a crash of the primary's host processes and a
// switchover; the times are by kind.
type AutoFailover struct {
	Settings  string               `json:"settings"` // "tuned" or "defaults"
	Changed   []string             `json:"changed"`  // the settings the test set, tuned or not
	Rounds    int                  `json:"rounds"`
	Producers int                  `json:"producers"`
	Consumers int                  `json:"consumers"`
	ExpiryMS  float64              `json:"expiry_ms"`
	Committed int                  `json:"pushes_committed"`
	Failed    int                  `json:"pushes_failed"`
	ResumesMS map[string][]float64 `json:"resumes_ms"` // from the crash or the switchover's start to the first effect committed after it
	GapsMS    map[string][]float64 `json:"gaps_ms"`    // from the old primary's last effect to the new primary's first
}

// autoFailoverKinds are the kinds of rounds, in the order of the table.
var autoFailoverKinds = []string{"crash", "switchover"}

// autoFailoverText is the block "autofailover_SETTINGS" of the docs: the
// resume times of r's rounds by kind.
func autoFailoverText(r *Report) string {
	f := r.AutoFailover
	var b strings.Builder
	b.WriteString("| round | rounds | work resumed after it, p50 | slowest | no commit for, p50 | longest |\n|---|---|---|---|---|---|\n")
	for _, kind := range autoFailoverKinds {
		resumes, gaps := f.ResumesMS[kind], f.GapsMS[kind]
		if len(resumes) == 0 || len(gaps) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", kind, len(resumes),
			seconds(medianOf(resumes)), seconds(slices.Max(resumes)), seconds(medianOf(gaps)), seconds(slices.Max(gaps)))
	}
	date, _, _ := strings.Cut(r.Date, "T")
	fmt.Fprintf(&b, "\nMeasured on %s by `%s`: pg_auto_failover %s, %s (settings changed: %s), %d producers and %d consumer processes (expiry %s), "+
		"%d pushes committed (%d failed), nothing lost, no effect twice; %d vCPUs, %s.\n",
		date, r.Command, r.Machine.AutoFailover, f.Settings, strings.Join(f.Changed, ", "), f.Producers, f.Consumers,
		seconds(f.ExpiryMS), f.Committed, f.Failed, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2))
	return b.String()
}

// seconds writes milliseconds as seconds with one decimal.
func seconds(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) }
