package integration_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The analysis of running taskrepo on Citus and on YugabyteDB
// (docs/distributed.md) is checked against what taskpg really sends:
// TestTaskpgConformance runs the conformance suite and a Notifier on pools
// that record every statement, sorts the distinct statements by the
// features that decide where they run, does the same for the schema's
// migrations, and fails when the document's table of those features (a
// generated block) says otherwise. TASK_TEST_UPDATE_DOCS=1 rewrites the
// block.

// A feature is a construct of taskpg's SQL that a distributed PostgreSQL
// may not run as PostgreSQL does, with what each system makes of it.
type feature struct {
	name     string
	pattern  *regexp.Regexp // nil: match decides
	match    func(statement string) bool
	citus    string // the task table distributed by topic (create_distributed_table('task', 'topic'))
	yugabyte string
}

// uses reports whether statement (or the schema) holds f.
func (f feature) uses(statement string) bool {
	if f.match != nil {
		return f.match(statement)
	}
	return f.pattern.MatchString(statement)
}

// taskTable finds the task table itself (not task_topic and the others),
// and oneTopic a statement that fixes its topic to one value.
var (
	taskTable = regexp.MustCompile(`"public"\."?task"?(\s|\)|$)`)
	oneTopic  = regexp.MustCompile(`(?i)\btopic\s*=\s*\$\d`)
	anyTopic  = regexp.MustCompile(`(?i)\btopic\s*=\s*any\b`)
	writes    = regexp.MustCompile(`(?i)\b(update|delete\s+from|insert\s+into)\s+"public"\.task(\s|$)`)
)

// features are the constructs the analysis weighs, in its table's order.
var features = []feature{
	{name: "the task table, one topic (topic = $n): routed to one shard",
		match: func(q string) bool {
			return taskTable.MatchString(q) && oneTopic.MatchString(q) && !anyTopic.MatchString(q)
		},
		citus:    "yes: a router query runs on one worker as PostgreSQL runs it, row locks, SKIP LOCKED and WITH included",
		yugabyte: "yes"},
	{name: "the task table, several topics (topic = ANY), reads",
		match: func(q string) bool {
			return taskTable.MatchString(q) && anyTopic.MatchString(q) && !writes.MatchString(q)
		},
		citus:    "yes: sent to every shard of those topics, merged on the coordinator",
		yugabyte: "yes"},
	{name: "the task table, several topics, writes (expiring silent owners' tasks)",
		match:    func(q string) bool { return anyTopic.MatchString(q) && writes.MatchString(q) },
		citus:    "a multi-shard UPDATE whose subquery reads the same table: Citus plans the subquery first (recursive planning); to be checked on a Citus cluster",
		yugabyte: "yes"},
	{name: "the other tables (topics, owners, holds, leaders, schedules, audit)",
		match:    func(q string) bool { return !taskTable.MatchString(q) && strings.Contains(q, `"public".task_`) },
		citus:    "as reference tables (a copy on every node): joins with the task table work; every write goes to every node",
		yugabyte: "yes"},
	{name: "row locks with SKIP LOCKED", pattern: regexp.MustCompile(`(?is)\bfor\s+(no\s+key\s+)?update\b.*\bskip\s+locked\b`),
		citus:    "on one shard only (all of taskpg's are); FOR UPDATE across shards is refused",
		yugabyte: "yes"},
	{name: "row locks that wait (FOR UPDATE, FOR KEY SHARE)", pattern: regexp.MustCompile(`(?is)\bfor\s+(no\s+key\s+update|update|share|key\s+share)\b(?:\s+of\s+\w+)?\s*(?:\)|$|;|on\s+conflict)`),
		citus:    "on one shard, or on reference tables",
		yugabyte: "yes, with wait-on-conflict concurrency control (the default from 2.20)"},
	{name: "transaction advisory locks", pattern: regexp.MustCompile(`(?i)pg_(try_)?advisory_xact_lock`),
		citus:    "held on the node that runs the statement: they serialize only clients that go through one coordinator",
		yugabyte: "from 2.25 (on by default from 2.27); refused before"},
	{name: "NOTIFY (pg_notify)", pattern: regexp.MustCompile(`(?i)\bpg_notify\s*\(`),
		citus:    "on the coordinator: it reaches listeners connected to that node",
		yugabyte: "early access from 2025.2.3 (yb_enable_listen_notify); refused before"},
	{name: "LISTEN", pattern: regexp.MustCompile(`(?i)^\s*listen\b`),
		citus:    "on the coordinator, as NOTIFY",
		yugabyte: "as NOTIFY"},
	{name: "data-modifying WITH", pattern: regexp.MustCompile(`(?is)\bas\s*(?:not\s+)?(?:materialized\s*)?\(\s*(update|delete|insert)\b`),
		citus:    "on one shard or on reference tables",
		yugabyte: "yes"},
	{name: "INSERT … ON CONFLICT", pattern: regexp.MustCompile(`(?is)\bon\s+conflict\b`),
		citus:    "yes (all on reference tables)",
		yugabyte: "yes"},
	{name: "sequences (nextval) and a topic's ticket sequence", pattern: regexp.MustCompile(`(?i)\bnextval\s*\(`),
		citus:    "on the coordinator; values leave it in call order",
		yugabyte: "yes, with a cache per node: values no longer rise in commit order across nodes"},
	{name: "functions of the schema (SECURITY DEFINER: a topic's partition, statistics)", pattern: regexp.MustCompile(`(?i)"public"\."?task_\w+\s*\(`),
		citus:    "on the coordinator; the partition they create is distributed and co-located by Citus",
		yugabyte: "yes"},
	{name: "COPY", pattern: regexp.MustCompile(`(?i)^\s*copy\b`),
		citus:    "yes, each row routed to its shard",
		yugabyte: "yes"},
	{name: "catalog reads", pattern: regexp.MustCompile(`(?i)\bpg_(database|class|namespace|stat_activity)\b`),
		citus:    "of the coordinator's catalog",
		yugabyte: "yes"},
}

// schemaFeatures are the constructs of the migrations the analysis weighs.
var schemaFeatures = []feature{
	{name: "LIST partitions of the task table, one per topic", pattern: regexp.MustCompile(`(?i)\bpartition\s+by\s+list\b`),
		citus:    "yes: the task table distributed by topic; each topic's rows live in one shard group",
		yugabyte: "yes"},
	{name: "a trigger on task_topic that creates and drops a topic's partition (SECURITY DEFINER)", pattern: regexp.MustCompile(`(?i)\bcreate\s+trigger\s+task_topic_partition\b`),
		citus:    "task_topic a reference table: its trigger needs citus.enable_unsafe_triggers, and the partition it creates must then be distributed by a call of Citus's own",
		yugabyte: "yes"},
	{name: "row triggers on a topic's partition (capacity, limits)", pattern: regexp.MustCompile(`(?i)CREATE TRIGGER task_(admission|return|limit)\b`),
		citus:    "they would run on the workers, where the advisory locks and ticket sequences they use are each node's own: capacity and limits would no longer hold across the cluster",
		yugabyte: "yes"},
	{name: "SECURITY DEFINER functions", pattern: regexp.MustCompile(`(?i)\bsecurity\s+definer\b`),
		citus:    "yes, on the coordinator",
		yugabyte: "yes"},
	{name: "foreign keys to task_topic", pattern: regexp.MustCompile(`(?i)\breferences\s+task_topic\b`),
		citus:    "yes, from reference tables to a reference table",
		yugabyte: "yes"},
	{name: "sequences (the task sequence, identity, tickets)", pattern: regexp.MustCompile(`(?i)\b(generated\s+always\s+as\s+identity|create\s+sequence)\b`),
		citus:    "yes, on the coordinator",
		yugabyte: "yes, cached per node"},
}

// recorder is a pgx tracer that keeps every statement text sent.
type recorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *recorder) add(sql string) {
	if !fromTaskpg() {
		return // the suite's own statements (blocking a table, killing a session)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[strings.Join(strings.Fields(sql), " ")] = true
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	return ctx
}
func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL)
}
func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (r *recorder) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	r.add("COPY " + d.TableName.Sanitize())
	return ctx
}
func (r *recorder) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// fromTaskpg reports whether package taskpg is on the stack.
func fromTaskpg() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/taskrepo/taskrepo/taskpg.") {
			return true
		}
		if !more {
			return false
		}
	}
}

// statements returns the statements recorded, sorted.
func (r *recorder) statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for s := range r.seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// tracedPool is testdb.Postgres with every statement recorded by r.
func tracedPool(t *testing.T, r *recorder) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	cfg.ConnConfig.Tracer = r
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// wantDistributedTable fails t unless docs/distributed.md's table is the
// one the statements that r recorded make, or rewrites it under
// TASK_TEST_UPDATE_DOCS=1. It checks nothing when -run or -skip left out
// some of the suite: the statements would be a part of them.
func wantDistributedTable(t *testing.T, r *recorder) {
	t.Helper()
	if t.Failed() {
		return
	}
	if run, skip := flag.Lookup("test.run").Value.String(), flag.Lookup("test.skip").Value.String(); strings.Contains(run, "/") || skip != "" {
		t.Logf("docs/distributed.md not checked: -run %q -skip %q runs a part of the suite", run, skip)
		return
	}
	statements := r.statements()
	if out := os.Getenv("TASK_TEST_STATEMENTS"); out != "" { // the statements themselves, for a reader of the analysis
		if err := os.WriteFile(out, []byte(strings.Join(statements, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	schema := migrationSQL(t)
	block := distributedTable(statements, schema)
	const doc = "../docs/distributed.md"
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := generated.FindSubmatchIndex(text)
	if m == nil {
		t.Fatalf("%s holds no <!-- check:statements --> block", doc)
	}
	if os.Getenv("TASK_TEST_UPDATE_DOCS") != "" {
		out := slices.Concat(text[:m[2]], []byte(block), text[m[3]:])
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if have := string(text[m[2]:m[3]]); have != block {
		t.Errorf("%s's table differs from the statements taskpg sent (TASK_TEST_UPDATE_DOCS=1 rewrites it):\n%s\nwant:\n%s", doc, have, block)
	}
}

// generated finds the block of docs/distributed.md that the test writes.
var generated = regexp.MustCompile(`(?s)<!-- check:statements -->\n(.*?)<!-- /check:statements -->`)

// listenOnce runs a Notifier on pool until a push on a topic wakes it,
// and records its LISTEN in r.
func listenOnce(t *testing.T, r *recorder, pool *pgxpool.Pool) {
	repo, err := taskpg.New("listener", taskpg.WithWakeUps(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(t.Context(), pool, "orders"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	woken := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- taskpg.NewNotifier(pool).Listen(ctx, func([]string) {
			select {
			case woken <- struct{}{}:
			default:
			}
		}, func([]string) {}, func([]string) {}, func(error) {})
	}()
	deadline := time.After(time.Minute)
	for pushed := false; !pushed; {
		if _, err := repo.Push(t.Context(), pool, "orders", taskapi.Append, taskapi.Creation{Identifier: "x"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
			pushed = true
		case <-deadline:
			t.Fatal("the Notifier heard no push in a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The Notifier sends its LISTEN on a connection of its own, below the
	// tracer: the server says what that connection ran last.
	cfg := pool.Config().ConnConfig
	cfg.Tracer = nil // this reading is the test's, not taskpg's
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var listen string
	err = conn.QueryRow(t.Context(), "SELECT query FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
		taskpg.NotifierApplicationName).Scan(&listen)
	if err != nil {
		t.Fatalf("the Notifier's connection: %v", err)
	}
	r.mu.Lock()
	r.seen[strings.Join(strings.Fields(listen), " ")] = true
	r.mu.Unlock()
	cancel()
	<-done
}

// migrationSQL returns the text of PostgreSQL's migrations.
func migrationSQL(t *testing.T) string {
	var all strings.Builder
	err := fs.WalkDir(migrations.Files, "postgres", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(migrations.Files, path)
		all.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.String()
}

// distributedTable is the generated block of docs/distributed.md: how many
// of the statements use each feature, and each system's verdict; then the
// schema's features.
func distributedTable(statements []string, schema string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| what taskpg sends | statements (of %d) | Citus, tasks distributed by topic | YugabyteDB |\n|---|---|---|---|\n", len(statements))
	for _, f := range features {
		n := 0
		for _, s := range statements {
			if f.uses(s) {
				n++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", f.name, n, f.citus, f.yugabyte)
	}
	b.WriteString("\n| what the schema holds | in the migrations | Citus | YugabyteDB |\n|---|---|---|---|\n")
	for _, f := range schemaFeatures {
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", f.name, len(f.pattern.FindAllStringIndex(schema, -1)), f.citus, f.yugabyte)
	}
	return b.String()
}
