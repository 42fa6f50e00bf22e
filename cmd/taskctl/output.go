package main

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error { return output.JSON(a.stdout, v) }

// printf writes a line of text for people.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// printTable writes an aligned table with a header row (output.Table).
func (a *app) printTable(headers []string, rows [][]string) {
	output.Table(a.stdout, headers, rows)
}

// ago says how long before now t was, or how long after: "4s ago",
// "in 2m"; "-" for the zero time.
func ago(t, now time.Time) string { return ops.Ago(t, now, output.Roughly) }

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
