package taskpg

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The hot statements must stay on their indexes whatever the planner's
// statistics say. These tests count the pages a poll and a completion touch
// (EXPLAIN ANALYZE, in a transaction that is rolled back) in a backlog of
// planBacklog Ready tasks: a plan that probes its indexes touches a few pages
// per task, one that walks the backlog touches hundreds. Pages, unlike
// times, do not depend on how busy the machine is.
const (
	planBacklog  = 20_000
	planBatch    = 100
	pagesPerTask = 60 // a walk of the backlog per task costs about 300
)

// planTraps set up the statistics a backlog may be found with.
var planTraps = []struct {
	name string
	set  func(t *testing.T, db *pgxpool.Pool, repo *Repository)
}{
	{"no statistics", func(*testing.T, *pgxpool.Pool, *Repository) {}},
	{"stale statistics", func(t *testing.T, db *pgxpool.Pool, repo *Repository) {
		t.Helper()
		if err := repo.Refresh(t.Context(), db); err != nil {
			t.Fatal(err)
		}
	}},
	{"autovacuum behind", func(t *testing.T, db *pgxpool.Pool, repo *Repository) {
		t.Helper()
		burnDown(t, db, repo) // leaves a backlog's worth of dead row versions
		load(t, db, repo)
	}},
}

func TestHotStatementsStayOnTheirIndexes(t *testing.T) {
	t.Parallel()
	for _, trap := range planTraps {
		t.Run(trap.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Postgres(t)
			repo := planSetup(t, db)
			load(t, db, repo)
			trap.set(t, db, repo)
			for _, order := range []taskapi.Order{taskapi.FIFO, taskapi.LIFO} {
				for _, condition := range []taskapi.Condition{taskapi.Unconditional, taskapi.SingularByIdentifierSuspendUntilSuccess} {
					query, args := repo.pollStatement(order, condition)
					checkPages(t, db, fmt.Sprintf("poll %v %v", order, condition), query, args)
				}
			}
			checkCompletePages(t, db, repo)
		})
	}
}

// pollStatement returns the poll statement of order and condition with its
// arguments for a poll of planBatch tasks.
func (r *Repository) pollStatement(order taskapi.Order, condition taskapi.Condition) (string, []any) {
	args := []any{"plan", r.owner, planBatch}
	if condition == taskapi.Unconditional {
		return r.q.poll[order][0], args
	}
	blocking := ordinals(append([]taskapi.State{taskapi.Active}, condition.Blocking()...))
	return r.q.poll[order][1], append(args, blocking)
}

// checkCompletePages polls a batch and checks the pages that completing it
// touches.
func checkCompletePages(t *testing.T, db *pgxpool.Pool, repo *Repository) {
	t.Helper()
	ctx := t.Context()
	tx, rollback := begin(t, db)
	defer rollback()
	tasks, err := repo.Poll(ctx, tx, "plan", planBatch)
	if err != nil || len(tasks) != planBatch {
		t.Fatalf("Poll: %d tasks, %v", len(tasks), err)
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Result(i % 4), Output: "out"}}
	}
	los, his, states, outputs, named := completeArgs(completions)
	checkPages(t, tx, "complete", repo.q.complete, []any{"plan", los, his, states, outputs, repo.owner, named})
}

// checkPages runs query under EXPLAIN ANALYZE in a transaction that is rolled
// back and fails unless it moved a batch of tasks into or out of Active (a
// poll or a completion) while touching at most pagesPerTask pages per task.
func checkPages(t *testing.T, db DB, what, query string, args []any) {
	t.Helper()
	ctx := t.Context()
	tx, rollback := begin(t, db)
	defer rollback()
	active := func() (n int) {
		t.Helper()
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM public.task WHERE state = 0").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := active()
	var plan []struct {
		Plan struct {
			Hit  int64 `json:"Shared Hit Blocks"`
			Read int64 `json:"Shared Read Blocks"`
		}
	}
	explain := "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query
	if err := tx.QueryRow(ctx, explain, append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&plan); err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	if len(plan) != 1 {
		t.Fatalf("%s: explain gave %d plans", what, len(plan))
	}
	if changed := active() - before; changed != planBatch && changed != -planBatch {
		t.Fatalf("%s changed the Active tasks by %d, want a batch of %d", what, changed, planBatch)
	}
	if pages := plan[0].Plan.Hit + plan[0].Plan.Read; pages > pagesPerTask*planBatch {
		t.Errorf("%s touched %d pages for %d tasks, want at most %d per task", what, pages, planBatch, pagesPerTask)
	}
}

// begin begins a transaction on db and returns it with its rollback.
func begin(t *testing.T, db DB) (pgx.Tx, func()) {
	t.Helper()
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tx, func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }
}

func planSetup(t *testing.T, db *pgxpool.Pool) *Repository {
	t.Helper()
	repo, err := New("plan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(t.Context(), db, "plan"); err != nil {
		t.Fatal(err)
	}
	// Keep autovacuum from changing the statistics under the test.
	if _, err := db.Exec(t.Context(), `ALTER TABLE public.`+pgx.Identifier{partition("plan")}.Sanitize()+
		` SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	return repo
}

// load pushes a backlog of Ready tasks, each identifier twice.
func load(t *testing.T, db *pgxpool.Pool, repo *Repository) {
	t.Helper()
	for first := 0; first < planBacklog; first += 1000 {
		creations := make([]taskapi.Creation, 1000)
		for i := range creations {
			creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", (first+i)%(planBacklog/2)), Input: "in"}
		}
		if _, err := repo.Push(t.Context(), db, "plan", taskapi.Append, creations...); err != nil {
			t.Fatal(err)
		}
	}
}

// burnDown polls and completes every Ready task.
func burnDown(t *testing.T, db *pgxpool.Pool, repo *Repository) {
	t.Helper()
	for {
		tasks, err := repo.Poll(t.Context(), db, "plan", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			return
		}
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		if err := repo.Complete(t.Context(), db, "plan", completions...); err != nil {
			t.Fatal(err)
		}
	}
}

// A generic plan, made once and kept for the life of a prepared statement,
// fits the table as it was then: one made while the partition was small
// scanned it whole on every later poll. Polls and completions are planned
// per call, for the table as it is.
func TestHotStatementsAreNeverGeneric(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Postgres(t)
	repo := planSetup(t, pool)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	db := conn.Conn()
	for i := range 20 { // PostgreSQL considers a generic plan from the sixth run on
		for _, condition := range []taskapi.Condition{taskapi.Unconditional, taskapi.SingularByIdentifier} {
			if _, err := repo.Push(ctx, db, "plan", taskapi.Append, taskapi.Creation{Identifier: fmt.Sprint("id-", i, condition)}); err != nil {
				t.Fatal(err)
			}
			tasks, err := repo.Poll(ctx, db, "plan", 10, condition)
			if err != nil || len(tasks) != 1 {
				t.Fatalf("Poll(%v): %v, %v", condition, tasks, err)
			}
			if err := repo.Complete(ctx, db, "plan", taskapi.Completion{Task: tasks[0], Decision: taskapi.Decision{Result: taskapi.Success}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, _ := db.Query(ctx, `SELECT statement FROM pg_prepared_statements
WHERE generic_plans > 0 AND statement ~* '^\s*(WITH .*)?UPDATE'`)
	generic, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range generic {
		t.Errorf("ran from a generic plan:%s", statement)
	}
}

// partition returns the name of the partition of topic, as the schema's
// trigger names it.
func partition(topic string) string {
	sum := md5.Sum([]byte(topic))
	return "task_" + hex.EncodeToString(sum[:])
}
