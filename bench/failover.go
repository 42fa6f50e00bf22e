package main

import (
	"fmt"
	"strings"
	"time"
)

// Failover is what faults' TestFailoverLosesNothingCommitted measured, which
// writes a report holding it when TASK_TEST_FAILOVER_RESULTS names a file
// (results/failover.json): how long after each failover work resumed.
// The bench measures no failover itself: the test starts the primary and
// its standby (internal/testkit/testdb), which only a test can.
type Failover struct {
	Synchronous bool      `json:"synchronous"`
	Producers   int       `json:"producers"`
	Consumers   int       `json:"consumers"`
	Committed   int       `json:"pushes_committed"`
	Failed      int       `json:"pushes_failed"`
	ResumesMS   []float64 `json:"resumes_ms"` // from each kill to the first task completed after it
}

// failoverText is the block "failover" of the docs: the resume times of r's
// failovers, or a line that says the results hold none.
func failoverText(r *Report) string {
	f := r.Failover
	if len(f.ResumesMS) == 0 {
		return "No failover was measured in these results.\n"
	}
	var l latencies
	for _, ms := range f.ResumesMS {
		l.d = append(l.d, time.Duration(ms*float64(time.Millisecond)))
	}
	p50, _ := l.percentile(50, false)
	p99, _ := l.percentile(99, false)
	worst, _ := l.percentile(100, false)
	replication := "asynchronous"
	if f.Synchronous {
		replication = "synchronous"
	}
	date, _, _ := strings.Cut(r.Date, "T")
	return fmt.Sprintf("| failovers | work resumed after the kill, p50 | p99 | slowest | pushes committed (failed) |\n"+
		"|---|---|---|---|---|\n"+
		"| %d | %.0f ms | %.0f ms | %.0f ms | %d (%d) |\n\n"+
		"Measured on %s by `%s`: %d producers and %d consumer processes, %s replication, %d vCPUs, %s.\n",
		len(f.ResumesMS), p50, p99, worst, f.Committed, f.Failed,
		date, r.Command, f.Producers, f.Consumers, replication, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2))
}
