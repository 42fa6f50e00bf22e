package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The statements of a task's life (issue 24, point 1): over a continuous run's
// window and drain, pg_stat_statements tells what each statement of the
// scenario's database cost the server, and the pool's wire counter
// (wire.go) how many statements and round trips the side sent for it.

// StatementRun is what one side's statements cost over one run, per task.
type StatementRun struct {
	Run         string         `json:"run"`  // the figure key of the run, such as continuous_paced_100
	Side        string         `json:"side"` // taskproc or River
	Tasks       int            `json:"tasks"`
	Sent        float64        `json:"statements_sent_per_task"` // read off the wire: pool and LISTEN connections
	RoundTrips  float64        `json:"round_trips_per_task"`     // likewise
	ServerMS    float64        `json:"server_ms_per_task"`       // top-level statements' execution and planning time
	Unavailable string         `json:"unavailable,omitempty"`    // why pg_stat_statements could not be read
	Statements  []StatementRow `json:"statements,omitempty"`     // by time, most first
}

// StatementRow is one statement of pg_stat_statements.
type StatementRow struct {
	Label    string  `json:"label"` // what it is for (statementLabels)
	Query    string  `json:"query"` // on one line, shortened
	QueryID  int64   `json:"queryid"`
	TopLevel bool    `json:"toplevel"` // false: run inside another statement (a function)
	Calls    int64   `json:"calls"`
	MS       float64 `json:"ms"` // execution and planning
	Rows     int64   `json:"rows"`
	CallsPer float64 `json:"calls_per_task"`
	MSPer    float64 `json:"ms_per_task"`
}

// taskpgLabels say what a statement of taskpg is for, by the first
// fragment of its text (lowercased, as pg_stat_statements normalizes it)
// that it holds; a fragment starting with ^ must start the text.
// riverLabels do the same for River, by the name its queries carry
// ("-- name: JobGetAvailable"). The two tables are the one place that
// knows the two sides' SQL.
var (
	taskpgLabels = []struct{ fragment, label string }{
		{"task_activation", "activation"},
		{"pg_notify", "push with wake-up (pg_notify)"},
		{".task (topic", "push"},
		{"with polled as", "poll"},
		{"with runs as", "complete"},
		{"-- descent stays", "complete (one task)"},
		{"select exists (select from", "owner check (empty poll)"}, // gone since; in older results
		{"select not_before from", "due time"},
		{"set heartbeat", "heartbeat"},
		{"task_owner as o (owner", "register"},
		{"task_hold", "reclaim (expiry)"},
		{"set state = 2", "reclaim (expiry)"},
		{"^select (statement_timestamp()", "clock"},
		{"^select set_config(", "plan settings (per round trip)"},
		{"^unlisten", "UNLISTEN"},
		{"^listen", "LISTEN"},
		{"^begin", "BEGIN"},
		{"^commit", "COMMIT"},
		{"^rollback", "ROLLBACK"},
	}
	riverLabels = map[string]string{
		"JobInsertFastMany":         "River insert (push)",
		"JobInsertFast":             "River insert (push)",
		"JobGetAvailable":           "River fetch (poll)",
		"JobSetStateIfRunningMany":  "River complete",
		"PGNotifyMany":              "River notify (wake-up)",
		"JobSchedule":               "River scheduler (due time)",
		"JobGetStuck":               "River rescuer (reclaim)",
		"JobRescueMany":             "River rescuer (reclaim)",
		"JobDeleteBefore":           "River cleaner",
		"QueueDeleteExpired":        "River queue upkeep",
		"QueueCreateOrSetUpdatedAt": "River queue upkeep",
		"LeaderAttemptElect":        "River leader election",
		"LeaderAttemptReelect":      "River leader election",
		"LeaderResign":              "River leader election",
	}
)

// label names what query is for, or "other".
func label(query string) string {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(query), "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		if l, ok := riverLabels[name]; ok {
			return l
		}
		return "River " + name
	}
	q := strings.ToLower(strings.TrimSpace(query))
	for _, l := range taskpgLabels {
		if prefix, ok := strings.CutPrefix(l.fragment, "^"); ok && strings.HasPrefix(q, prefix) ||
			!ok && strings.Contains(q, l.fragment) {
			return l.label
		}
	}
	return "other"
}

// statementsAvailable returns why pg_stat_statements cannot be read on the
// server, or "" when it can.
func statementsAvailable(ctx context.Context, admin *pgx.Conn) string {
	var preload string
	if err := admin.QueryRow(ctx, "SELECT current_setting('shared_preload_libraries')").Scan(&preload); err != nil {
		return "unavailable: " + err.Error()
	}
	if !strings.Contains(preload, "pg_stat_statements") {
		return "unavailable: pg_stat_statements not preloaded"
	}
	return ""
}

// enableStatements creates pg_stat_statements in a fresh scenario
// database, before anything is measured there, when the server has it
// preloaded. A failure is left to probeStatements, whose reset then fails
// and says why in the figures.
func (b *bench) enableStatements(ctx context.Context, pool *pgxpool.Pool) {
	if b.pgss == "" {
		_, _ = pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	}
}

// statementProbe watches one side's statements from the start of a run.
type statementProbe struct {
	pool        *pgxpool.Pool
	wire        reading
	unavailable string
}

// probeStatements forgets the statements of the scenario's database so far
// and notes the wire counter: what follows is the run's.
func (b *bench) probeStatements(ctx context.Context, pool *pgxpool.Pool) *statementProbe {
	p := &statementProbe{pool: pool, unavailable: b.pgss}
	if p.unavailable == "" {
		_, err := pool.Exec(ctx, "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)")
		if err != nil {
			p.unavailable = "unavailable: " + err.Error()
		}
	}
	p.wire = wireOf(pool).read()
	return p
}

// read returns the run's statements per task, of tasks tasks.
func (p *statementProbe) read(ctx context.Context, tasks int) (*StatementRun, error) {
	sent := wireOf(p.pool).since(p.wire)
	run := &StatementRun{Tasks: tasks, Unavailable: p.unavailable}
	if tasks == 0 {
		return run, nil
	}
	per := func(n float64) float64 { return n / float64(tasks) }
	run.Sent, run.RoundTrips = per(float64(sent.statements)), per(float64(sent.roundTrips))
	if p.unavailable != "" {
		return run, nil
	}
	rows, err := p.pool.Query(ctx, `
SELECT queryid, query, toplevel, calls, total_exec_time + total_plan_time, rows
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%'`)
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s StatementRow
		if err := rows.Scan(&s.QueryID, &s.Query, &s.TopLevel, &s.Calls, &s.MS, &s.Rows); err != nil {
			return nil, err
		}
		s.Label, s.Query = label(s.Query), oneLine(s.Query)
		s.CallsPer, s.MSPer = per(float64(s.Calls)), per(s.MS)
		if s.TopLevel { // a nested statement's time is in its caller's too
			run.ServerMS += s.MSPer
		}
		run.Statements = append(run.Statements, s)
	}
	slices.SortFunc(run.Statements, func(a, b StatementRow) int { return cmp.Compare(b.MS, a.MS) })
	return run, rows.Err()
}

// queryWidth is the most of a statement's text kept.
const queryWidth = 160

// oneLine writes a statement on one line, its whitespace collapsed, and
// shortened to queryWidth characters.
func oneLine(query string) string {
	q := strings.Join(strings.Fields(query), " ")
	if r := []rune(q); len(r) > queryWidth {
		q = string(r[:queryWidth-1]) + "…"
	}
	return q
}
