package main

import (
	"strings"
	"testing"
)

func TestLabelNamesBothSidesStatements(t *testing.T) {
	for query, want := range map[string]string{
		`WITH polled AS ( UPDATE "public".task AS t SET state = $4`:                          "poll",
		`INSERT INTO "public".task (topic, identifier, state) VALUES ($1, $2, $3)`:           "push",
		`INSERT INTO "public".task (topic) SELECT $1 WHERE pg_notify($9, topic) IS NOT NULL`: "push with wake-up (pg_notify)",
		`WITH runs AS (SELECT * FROM unnest($2::bigint[])`:                                   "complete",
		"begin":                                 "BEGIN",
		"COMMIT":                                "COMMIT",
		`LISTEN "task_abc"`:                     "LISTEN",
		"-- name: JobGetAvailable :many WITH x": "River fetch (poll)",
		"-- name: SomethingNew :one SELECT 1":   "River SomethingNew",
		"SELECT 42":                             "other",
	} {
		if got := label(query); got != want {
			t.Errorf("label(%q) = %q, want %q", query, got, want)
		}
	}
}

func TestStatementBlocksNameTheRunsAndTheCommand(t *testing.T) {
	r := &Report{Command: "go run . --quick", Date: "2026-11-27T10:00:00Z", Statements: []StatementRun{
		{Run: "continuous_paced_100", Side: "taskproc", Tasks: 10, Sent: 7, RoundTrips: 7, ServerMS: 0.5,
			Statements: []StatementRow{{Label: "poll", Query: "WITH polled AS (a | b)", TopLevel: true, CallsPer: 1, MSPer: 0.2}}},
		{Run: "continuous_paced_100", Side: "River", Tasks: 10, Unavailable: "unavailable: pg_stat_statements not preloaded"},
	}}
	block := statementBlocks(r)["statements_100"]
	for _, want := range []string{"`go run . --quick`", "**taskproc**, 10 tasks: 7.00 statements", "| poll | `WITH polled AS (a \\| b)` | 1.00 | 0.200 |",
		"**River**, 10 tasks", "not preloaded"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
}
