package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// topHeaders are the columns of top's table.
var topHeaders = []string{
	"TOPIC", "ACTIVATION", "READY", "ACTIVE", "EXPIRED", "FAILED", "SUSPENDED", "SUCCEEDED", "CANCELLED", "OTHER",
	"DONE/S", "PUSHED/S", "WAIT",
}

// topStateColumns are the states with a column of their own, in order;
// topOtherStates share the column OTHER.
var (
	topStateColumns = []taskapi.State{taskapi.Ready, taskapi.Active, taskapi.Expired, taskapi.Failed, taskapi.Suspended, taskapi.Succeeded, taskapi.Cancelled}
	topOtherStates  = []taskapi.State{taskapi.Filtered, taskapi.Recreated, taskapi.Redundant}
)

// rows returns the cells of the table, one row per topic.
func (s topSnapshot) rows(cfg Config) [][]string {
	rows := make([][]string, 0, len(s.topics))
	for _, t := range s.topics {
		row := []string{output.Clip(t.topic, 40), t.activation.String()}
		for _, state := range topStateColumns {
			row = append(row, strconv.FormatInt(t.states[state], 10))
		}
		var other int64
		for _, state := range topOtherStates {
			other += t.states[state]
		}
		row = append(row, strconv.FormatInt(other, 10),
			topRate(topPerSecond(t.done, cfg.Window)), topRate(topPerSecond(t.pushed, cfg.Window)), t.waitText())
		rows = append(rows, row)
	}
	return rows
}

// waitText is the WAIT cell: "-" when no READY task is due.
func (t topTopicReading) waitText() string {
	if !t.waiting {
		return "-"
	}
	return output.Roughly(t.wait)
}

// topPerSecond is n events over window as a rate per second.
func topPerSecond(n int64, window time.Duration) float64 {
	return float64(n) / window.Seconds()
}

// topRate writes a rate per second for a table cell.
func topRate(r float64) string {
	switch {
	case r == 0:
		return "0"
	case r < 0.1:
		return "<0.1"
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// ownersLine says how many owners are alive, and which.
func (s topSnapshot) ownersLine(cfg Config) string {
	line := fmt.Sprintf("owners alive (heartbeat within %s): %d", topDuration(cfg.Within), len(s.owners))
	if len(s.owners) > 0 {
		line += ": " + strings.Join(s.owners, ", ")
	}
	return line
}

// topDuration writes d as time.Duration does without its empty units:
// "1h" rather than "1h0m0s", "5m" rather than "5m0s".
func topDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// topJSON is one reading as --json prints it.
type topJSON struct {
	At            time.Time      `json:"at"`
	WindowSeconds float64        `json:"window_seconds"`
	Topics        []topTopicJSON `json:"topics"`
	Owners        []string       `json:"owners"`
	WithinSeconds float64        `json:"within_seconds"` // --within: how recent an alive owner's heartbeat is
}

// topTopicJSON is one topic as --json prints it.
type topTopicJSON struct {
	Topic      string           `json:"topic"`
	Activation string           `json:"activation"`
	States     map[string]int64 `json:"states"`
	// Done and Pushed are the counts within the window; the rates are
	// them divided by the window.
	Done            int64   `json:"done"`
	Pushed          int64   `json:"pushed"`
	DonePerSecond   float64 `json:"done_per_second"`
	PushedPerSecond float64 `json:"pushed_per_second"`
	// OldestReadySeconds is the WAIT column, null when no READY task is due.
	OldestReadySeconds *float64 `json:"oldest_ready_seconds"`
}

// toJSON returns the reading as --json prints it: every state of every
// topic, zero included.
func (s topSnapshot) toJSON(cfg Config) topJSON {
	out := topJSON{
		At: s.at.UTC(), WindowSeconds: cfg.Window.Seconds(), Topics: []topTopicJSON{},
		Owners: append([]string{}, s.owners...), WithinSeconds: cfg.Within.Seconds(),
	}
	for _, t := range s.topics {
		j := topTopicJSON{
			Topic: t.topic, Activation: t.activation.String(), States: map[string]int64{},
			Done: t.done, Pushed: t.pushed,
			DonePerSecond: topPerSecond(t.done, cfg.Window), PushedPerSecond: topPerSecond(t.pushed, cfg.Window),
		}
		for state := taskapi.Active; state <= taskapi.Cancelled; state++ {
			j.States[state.String()] = t.states[state]
		}
		if t.waiting {
			seconds := t.wait.Seconds()
			j.OldestReadySeconds = &seconds
		}
		out.Topics = append(out.Topics, j)
	}
	return out
}
