package main

import (
	"bytes"
	"fmt"
	"strings"
)

// docStatements is the most statements of a side that a document lists;
// the rest are summed up in one line.
const docStatements = 12

// statementBlocks renders the statements of each continuous run as the
// block statements_RUN (statements_100, statements_1k, statements_flat),
// both sides one after the other.
func statementBlocks(r *Report) map[string]string {
	blocks := map[string]string{}
	for _, name := range []string{"statements_100", "statements_1k", "statements_flat"} {
		blocks[name] = "" // filled below, or said to be missing
	}
	for _, s := range r.Statements {
		name := "statements_" + strings.TrimPrefix(strings.TrimPrefix(s.Run, "continuous_"), "paced_")
		var buf bytes.Buffer
		if blocks[name] == "" {
			fmt.Fprintf(&buf, "Measured by `%s` in `bench/` on %s (%s).\n", r.Command, r.Date, statementsNote)
		}
		writeStatements(&buf, s)
		blocks[name] += buf.String()
	}
	for name, text := range blocks {
		if text == "" {
			blocks[name] = "These results hold no statements: they come from a run before issue 24, or without the continuous scenario.\n"
		}
	}
	return blocks
}

// statementsNote says where the figures come from.
const statementsNote = "server time: pg_stat_statements' execution and planning time, reset right before the window; " +
	"statements and round trips: read off the wire of the side's pool connections and its LISTEN connection"

// writeStatements writes one side's statements as a Markdown table.
func writeStatements(buf *bytes.Buffer, s StatementRun) {
	fmt.Fprintf(buf, "\n**%s**, %d tasks: %.2f statements and %.2f round trips sent per task", s.Side, s.Tasks, s.Sent, s.RoundTrips)
	if s.Unavailable != "" {
		fmt.Fprintf(buf, "; server time %s.\n", s.Unavailable)
		return
	}
	fmt.Fprintf(buf, ", %.3f ms of server time per task.\n\n", s.ServerMS)
	buf.WriteString("| what | statement | calls per task | ms per task |\n| --- | --- | ---: | ---: |\n")
	var restCalls, restMS float64
	for i, st := range s.Statements {
		if i >= docStatements {
			restCalls, restMS = restCalls+st.CallsPer, restMS+st.MSPer
			continue
		}
		query := st.Query
		if r := []rune(query); len(r) > 72 {
			query = string(r[:71]) + "…"
		}
		nested := ""
		if !st.TopLevel {
			nested = " (nested)"
		}
		// Labelled again by today's table, so that a statement it learnt
		// to name since the run is named in the docs too.
		fmt.Fprintf(buf, "| %s%s | `%s` | %.2f | %.3f |\n", label(st.Query), nested, strings.ReplaceAll(query, "|", `\|`), st.CallsPer, st.MSPer)
	}
	if n := len(s.Statements) - docStatements; n > 0 {
		fmt.Fprintf(buf, "| %d more | | %.2f | %.3f |\n", n, restCalls, restMS)
	}
}
