package taskpg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The plan tests run every trap in two modes: the statements on task,
// planned for their arguments, as a call inside a caller's transaction
// sends them; and on the topic's partition with plans forced generic (and
// setGenericPlans's settings), made while the partition was empty, which
// is the plan a server may keep for taskpg's own round trips however the
// partition grows (see partition.go).
var planModes = []struct {
	name    string
	generic bool
}{
	{"custom plans on task", false},
	{"generic plans on the partition made empty", true},
}

// explaining runs the hot statements under EXPLAIN ANALYZE as a plan mode
// has the server plan them.
type explaining struct {
	pool  *pgxpool.Pool
	repo  *Repository
	conn  *pgx.Conn         // generic: the session holding the prepared statements
	names map[string]string // generic: the prepared statements by their text on task
}

// explainingFor returns the explaining of a plan mode on pool, whose topic
// "plan" is empty yet: a generic one prepares the hot statements on the
// partition and has the server make their generic plans now.
func explainingFor(t *testing.T, pool *pgxpool.Pool, repo *Repository, generic bool) *explaining {
	t.Helper()
	e := &explaining{pool: pool, repo: repo}
	if !generic {
		return e
	}
	ctx := t.Context()
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	e.conn, e.names = c.Conn(), map[string]string{}
	if _, err := e.conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;
SET enable_bitmapscan = off; SET jit = off`, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	for i, s := range hotStatements(repo) {
		name := fmt.Sprint("plan_", i)
		onPartition := s.onPartition.on(repo.schema, "plan")
		if _, err := e.conn.Prepare(ctx, name, onPartition); err != nil {
			t.Fatalf("%s: prepare: %v", s.what, err)
		}
		var plan []byte
		if err := e.conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+e.execute(t, name, s.args)).Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", s.what, err)
		}
		if !strings.Contains(string(plan), partitionName("plan")) {
			t.Fatalf("%s: planned without the partition: %s", s.what, plan)
		}
		e.names[s.sql] = name
	}
	return e
}

// db returns the handle the checks run their transactions on.
func (e *explaining) db() DB {
	if e.conn != nil {
		return e.conn
	}
	return e.pool
}

// explain returns the statement that runs query, a statement on task, with
// args under EXPLAIN ANALYZE in the mode, and its arguments.
func (e *explaining) explain(t *testing.T, query string, args []any) (string, []any) {
	t.Helper()
	if e.conn == nil {
		return testdb.ExplainPrefix + query, append([]any{pgx.QueryExecModeExec}, args...)
	}
	name, ok := e.names[query]
	if !ok {
		t.Fatalf("not prepared while the partition was empty:%s", query)
	}
	return testdb.ExplainPrefix + e.execute(t, name, args), nil
}

// execute returns EXECUTE of the prepared statement name with args as
// literals: EXPLAIN takes no parameters of its own.
func (e *explaining) execute(t *testing.T, name string, args []any) string {
	t.Helper()
	m := e.conn.TypeMap()
	literals := make([]string, len(args))
	for i, arg := range args {
		typ, ok := m.TypeForValue(arg)
		if !ok {
			t.Fatalf("no type for %T", arg)
		}
		text, err := m.Encode(typ.OID, pgtype.TextFormatCode, arg, nil)
		if err != nil {
			t.Fatal(err)
		}
		literals[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'"
	}
	return "EXECUTE " + name + " (" + strings.Join(literals, ", ") + ")"
}

// hotStatement is a statement on task whose pages the plan tests count,
// with arguments of its types, and its form on the partition.
type hotStatement struct {
	what, sql   string
	args        []any
	onPartition partitioned
}

// hotStatements returns the statements that taskpg's own round trips send
// on the partition: the polls the plan tests measure and the completions.
func hotStatements(repo *Repository) []hotStatement {
	var hot []hotStatement
	for _, order := range []taskapi.Order{taskapi.FIFO, taskapi.LIFO} {
		for _, p := range planPolls {
			p.Order = order
			for _, termed := range []bool{false, true} {
				sql, args := repo.pollStatement(p, termed)
				hot = append(hot, hotStatement{pollWhat(p, termed), sql, args, repo.pollOnPartition(p, termed)})
			}
		}
	}
	return append(hot,
		hotStatement{"complete", repo.q.completeOwn, []any{"plan", []int64{1}, []int64{1}, []int16{3}, []string{"out"}, repo.owner, 1},
			repo.q.onPartition.complete},
		hotStatement{"complete of one task", repo.q.completeOne, []any{"plan", int64(1), int16(3), "out", repo.owner},
			repo.q.onPartition.completeOne})
}

// pollOnPartition returns the form on the partition of the statement of
// pollStatement.
func (r *Repository) pollOnPartition(p check.Polling, termed bool) partitioned {
	statements := &r.q.onPartition.poll
	if termed {
		statements = &r.q.onPartition.pollTermed
	}
	if p.Condition == taskapi.Unconditional {
		return statements[p.Order][0]
	}
	return statements[p.Order][1]
}

// pollWhat names a poll in the tests' messages.
func pollWhat(p check.Polling, termed bool) string {
	what := fmt.Sprintf("poll %v %v", p.Order, p.Condition)
	if p.AwaitRevival {
		what += " " + taskapi.AwaitRevival{}.String()
	}
	if termed {
		what += " under a term"
	}
	return what
}
