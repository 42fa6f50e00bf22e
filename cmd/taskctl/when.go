package main

import "github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"

// The parsers of times, durations, states and sequences, shared with the
// dashboard; their errors are usage errors (exit 2).
var (
	parseWhen      = ops.ParseWhen
	parseTimestamp = ops.ParseTimestamp
	parseDuration  = ops.ParseDuration
	parseStates    = ops.ParseStates
	parseSequences = ops.ParseSequences
)
