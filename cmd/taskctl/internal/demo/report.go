package demo

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// report prints the summary: JSON with --json, else tables and lines.
func report(c Config, s demoSummary) error {
	w := c.Stdout
	if c.JSON {
		return output.JSON(w, s)
	}
	fmt.Fprintf(w, "\nTasks by state\n")
	headers, rows := demoStateTable(s.Topics)
	output.Table(w, headers, rows)
	fmt.Fprintf(w, "\nResults of the run (completed tasks)\n")
	headers, rows = demoResultTable(s.Topics)
	output.Table(w, headers, rows)
	fmt.Fprintf(w, "\n")
	for _, line := range demoSummaryLines(s) {
		fmt.Fprintf(w, "%-11s %s\n", line[0], line[1])
	}
	printNext(c, s)
	return nil
}

// demoStateTable is a row per topic: pushed, ran and a column for each state
// that some topic has, in the states' order.
func demoStateTable(topics []demoTopicSummary) ([]string, [][]string) {
	var states []taskapi.State
	for state := taskapi.Active; state <= taskapi.Cancelled; state++ {
		if slices.ContainsFunc(topics, func(t demoTopicSummary) bool { return t.States[state.String()] > 0 }) {
			states = append(states, state)
		}
	}
	headers := []string{"TOPIC", "PUSHED", "RAN"}
	for _, state := range states {
		headers = append(headers, state.String())
	}
	rows := make([][]string, 0, len(topics))
	for _, t := range topics {
		row := []string{t.Topic, demoItoa(t.Pushed), demoItoa(t.Ran)}
		for _, state := range states {
			row = append(row, demoItoa(t.States[state.String()]))
		}
		rows = append(rows, row)
	}
	return headers, rows
}

// demoResultTable is a row per topic with a column per result.
func demoResultTable(topics []demoTopicSummary) ([]string, [][]string) {
	headers := []string{"TOPIC"}
	for result := taskapi.Success; result >= taskapi.Failure; result-- {
		headers = append(headers, result.String())
	}
	rows := make([][]string, 0, len(topics))
	for _, t := range topics {
		row := []string{t.Topic}
		for _, result := range headers[1:] {
			row = append(row, demoItoa(t.Results[result]))
		}
		rows = append(rows, row)
	}
	return headers, rows
}

// demoSummaryLines are the labelled lines under the tables.
func demoSummaryLines(s demoSummary) [][2]string {
	lines := [][2]string{
		{"consumers", demoConsumersLine(s.Consumers)},
		{"throughput", fmt.Sprintf("%d tasks completed in %.1fs: %.0f tasks/s (the producers pushed all %d over %.1fs, see --duration)",
			s.Completed, s.Seconds, s.Throughput, s.Pushed, s.PushSeconds)},
		{"latency", fmt.Sprintf("commit of the push to start of the handler, %d tasks: %s", s.Latency.Tasks, demoPercentiles(s.Latency))},
		{"retries", demoRetriesLine(s.Retries)},
		{"deferred", demoDeferredLine(s.Deferred, s.Started)},
		{"paused", demoPausedLine(s.Paused)},
	}
	if len(s.Recovered) > 0 {
		lines = append(lines, [2]string{"recovered", demoRecoveredLine(s.Recovered, s.FirstFail)})
	}
	return lines
}

// demoConsumersLine names the consumers and what each completed.
func demoConsumersLine(consumers []demoConsumer) string {
	parts := make([]string, 0, len(consumers))
	for _, c := range consumers {
		parts = append(parts, fmt.Sprintf("%s %d", c.Owner, c.Completed))
	}
	return fmt.Sprintf("%d taskproc Clients, an owner each; runs completed: %s", len(consumers), strings.Join(parts, ", "))
}

// demoPercentiles writes l's demoPercentiles.
func demoPercentiles(l demoLatency) string {
	return fmt.Sprintf("p50 %.1fms, p90 %.1fms, p99 %.1fms, max %.1fms", l.P50, l.P90, l.P99, l.Max)
}

// demoRetriesLine tells what became of demo.retries.
func demoRetriesLine(r demoRetrySummary) string {
	line := fmt.Sprintf("%d tasks, %d attempts at most, %d runs: %d succeeded at once, %d after a retry, %d failed on every attempt",
		r.Tasks, r.MaxAttempts, r.Runs, r.FirstTry, r.AfterRetry, r.Exhausted)
	if r.Example != nil {
		line += fmt.Sprintf(" (task %d logs %d attempts, the last %q)", r.Example.Sequence, r.Example.Attempts, r.Example.Last)
	}
	return line
}

// demoDeferredLine tells when the deferred tasks were due, counted from
// start, and when they ran.
func demoDeferredLine(d demoDeferred, start time.Time) string {
	early := "none started early"
	if d.Early > 0 {
		early = fmt.Sprintf("%d started early", d.Early)
	}
	return fmt.Sprintf("%d tasks due %.1fs to %.1fs after the first push: %d ran, %s; they started after their time by %s",
		d.Tasks, d.DueFrom.Sub(start).Seconds(), d.DueTo.Sub(start).Seconds(), d.Ran, early, demoPercentiles(d.Late))
}

// demoPausedLine tells how long demo.paused was paused and what ran meanwhile.
func demoPausedLine(p demoPausedTopic) string {
	meanwhile := "none ran before it was resumed"
	if p.RanPaused > 0 {
		meanwhile = fmt.Sprintf("%d ran before it was resumed", p.RanPaused)
	}
	return fmt.Sprintf("%d tasks pushed while %s was paused for %.1fs: %s; %d ran after", p.Tasks, demoPaused, p.PausedSeconds, meanwhile, p.Ran-p.RanPaused)
}

// demoRecoveredLine counts the failures the runtime recovered from.
func demoRecoveredLine(counts map[string]int64, first string) string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[kind], kind))
	}
	return fmt.Sprintf("%s (the first: %s)", strings.Join(parts, ", "), first)
}

// printNext says that the database stays, and what to look at in it.
func printNext(c Config, s demoSummary) {
	w := c.Stdout
	fmt.Fprintf(w, "\nThe demo's topics stay in %s for a look around:\n", s.Database)
	next := []string{"taskctl count", "taskctl list -t " + demoOrders + " --state failed"}
	if s.Retries.Example != nil {
		next = append(next, fmt.Sprintf("taskctl show -t %s %d", demoRetries, s.Retries.Example.Sequence))
	}
	next = append(next, "taskctl top")
	for _, cmd := range next {
		fmt.Fprintf(w, "  %s\n", cmd)
	}
	if c.Named != "" {
		fmt.Fprintf(w, "(name the same database with %s)\n", c.Named)
	}
}

// demoItoa writes n in decimal.
func demoItoa(n int64) string { return strconv.FormatInt(n, 10) }
