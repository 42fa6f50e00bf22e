package taskpg

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The hot statements must stay on their indexes whatever the planner's
// statistics say. These tests count the pages a poll and a completion touch
// (EXPLAIN ANALYZE, in a transaction that is rolled back) in a backlog of
// planBacklog Ready tasks: a plan that probes its indexes touches a few pages
// per task, one that walks the backlog touches hundreds. Pages, unlike
// times, do not depend on how busy the machine is.
//
// A poll's cost must not depend on how many tasks wait for their time
// either: each trap runs again with planAhead tasks ahead of the backlog
// (lower sequences), once Succeeded and once Ready but not yet due, and the
// polls must touch as many pages among the deferred tasks as among the
// Succeeded ones, but for deferredSlack. Both runs have tables and indexes
// of one size, whose depth a poll pays for every task it writes and every
// identifier it probes: on a quiet server the deferred tasks cost one page,
// the descent of their index, which is empty in the other run. The slack
// absorbs what other transactions on the server change in the cost of the
// dead rows that "autovacuum behind" leaves (up to some 250 pages); a poll
// that walks over the deferred tasks reads their index and their rows, some
// 1,800 pages.
//
// NextDue reads one entry of the index of deferred tasks, whatever their
// number: it must touch at most nextDuePages pages (the descent of the
// index and the row of the entry it finds) in every run, also with the
// planAhead tasks that wait ahead. A walk over them touches hundreds.
//
// A poll under a term is held to the same bound: it reads the term's row
// too, a few pages (the counts of one statement vary more than that from
// run to run, with the dead rows of the runs before).
//
// A keeper with revival looks for Expired tasks every few seconds: with
// none among the backlog and the tasks ahead, the look must touch at most
// revivalPages pages (the descent of the index of expired tasks), where a
// walk of the partition touches thousands.
const (
	planBacklog   = 20_000
	planBatch     = 100
	pagesPerTask  = 60 // a walk of the backlog per task costs about 300
	planAhead     = 100_000
	deferredSlack = 400
	nextDuePages  = 10
	revivalPages  = 10
)

// planRuns are the runs of every trap, one after the other: the tasks ahead
// of the backlog.
var planRuns = []struct {
	name  string
	ahead int
	state taskapi.State
}{
	{"nothing ahead", 0, taskapi.Ready},
	{"succeeded ahead", planAhead, taskapi.Succeeded},
	{"deferred ahead", planAhead, taskapi.Ready},
}

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
	if racedetector.Enabled {
		// Its backlogs took 24 s of a busy machine, and a
		// plan does not depend on the detector.
		t.Skip("the plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	for _, trap := range planTraps {
		for _, mode := range planModes {
			t.Run(trap.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				var done map[string]int64 // the pages of each poll with Succeeded tasks ahead
				for _, run := range planRuns {
					t.Run(run.name, func(t *testing.T) {
						db := testdb.Postgres(t)
						repo := planSetup(t, db)
						e := explainingFor(t, db, repo, mode.generic)
						loadAhead(t, db, run.ahead, run.state)
						load(t, db, repo)
						trap.set(t, db, repo)
						pages := checkPollPages(t, e)
						if run.state == taskapi.Succeeded {
							done = pages
						} else if run.ahead > 0 {
							for what, n := range pages {
								if n > done[what]+deferredSlack {
									t.Errorf("%s touched %d pages with %d deferred tasks ahead, want at most %d more than with Succeeded ones (%d)",
										what, n, run.ahead, deferredSlack, done[what])
								}
							}
						}
						checkNextDuePages(t, db, repo, run.ahead > 0 && run.state == taskapi.Ready)
						checkCompletePages(t, e)
						checkRevivalPages(t, db, repo)
					})
				}
			})
		}
	}
}

// checkPollPages checks the pages that the poll statements touch, and
// returns them by statement (those under a term are for the record only).
func checkPollPages(t *testing.T, e *explaining) map[string]int64 {
	t.Helper()
	pages := map[string]int64{}
	for _, s := range hotStatements(e.repo) {
		if !strings.HasPrefix(s.what, "poll") {
			continue
		}
		n := checkPages(t, e, s.what, s.sql, s.args)
		if !strings.HasSuffix(s.what, "under a term") {
			pages[s.what] = n
		}
		t.Logf("%s: %d pages", s.what, n) // for the record, in -v
	}
	return pages
}

// planPolls are the polls measured, in either order: unconditional, under
// the condition with the most blocking states, and under
// SingularByIdentifier awaiting revival, whose Expired comes as a
// parameter of the same statement.
var planPolls = []check.Polling{
	{Condition: taskapi.Unconditional},
	{Condition: taskapi.SingularByIdentifierSuspendUntilSuccess},
	{Condition: taskapi.SingularByIdentifier, AwaitRevival: true},
}

// pollStatement returns the poll statement of p with its arguments for a
// poll of planBatch tasks, as Poll sends them, under the repository's
// first term of the topic (see planSetup) when termed.
func (r *Repository) pollStatement(p check.Polling, termed bool) (string, []any) {
	statements, term := &r.q.poll[0], []any(nil)
	if termed {
		statements, term = &r.q.pollTermed[0], []any{int64(1)}
	}
	args := []any{"plan", r.owner, planBatch}
	if p.Condition == taskapi.Unconditional {
		if !termed && floorable(plainPoll, p.Order, false) {
			term = []any{int64(0)} // from the index's start, as on task
		}
		return statements[p.Order][0], append(args, term...)
	}
	return statements[p.Order][1], append(append(args, ordinals(p.Blocking())), term...)
}

// checkNextDuePages checks the pages that NextDue's statement touches, and
// that NextDue finds a time exactly when tasks wait.
func checkNextDuePages(t *testing.T, db *pgxpool.Pool, repo *Repository, waiting bool) {
	t.Helper()
	ctx := t.Context()
	var plan []byte
	if err := db.QueryRow(ctx, testdb.ExplainPrefix+repo.q.nextDue, pgx.QueryExecModeExec, "plan").Scan(&plan); err != nil {
		t.Fatalf("next due: explain: %v", err)
	}
	_, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatalf("next due: %v", err)
	}
	t.Logf("next due: %d pages", pages) // for the record, in -v
	if pages > nextDuePages {
		t.Errorf("next due touched %d pages, want at most %d", pages, nextDuePages)
	}
	next, err := repo.NextDue(ctx, db, "plan")
	if err != nil || next.IsZero() == waiting {
		t.Errorf("NextDue = %v, %v; want a time %v", next, err, waiting)
	}
}

// checkRevivalPages checks the pages that a keeper's revival of Expired
// tasks touches when there are none.
func checkRevivalPages(t *testing.T, db *pgxpool.Pool, repo *Repository) {
	t.Helper()
	var plan []byte
	err := db.QueryRow(t.Context(), testdb.ExplainPrefix+repo.q.reviveSpanReset, pgx.QueryExecModeExec,
		"plan", int16(taskapi.Expired), taskapi.Inception, taskapi.MaxSequence, 100, nil).Scan(&plan)
	if err != nil {
		t.Fatalf("revival: explain: %v", err)
	}
	_, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatalf("revival: %v", err)
	}
	t.Logf("revival: %d pages", pages) // for the record, in -v
	if pages > revivalPages {
		t.Errorf("the revival of Expired tasks touched %d pages with none to revive, want at most %d", pages, revivalPages)
	}
}

// checkCompletePages polls a batch and checks the pages that completing it
// touches.
func checkCompletePages(t *testing.T, e *explaining) {
	t.Helper()
	ctx := t.Context()
	tx, rollback := begin(t, e.db())
	defer rollback()
	tasks, err := e.repo.Poll(ctx, tx, "plan", planBatch)
	if err != nil || len(tasks) != planBatch {
		t.Fatalf("Poll: %d tasks, %v", len(tasks), err)
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Result(i % 4), Output: "out"}}
	}
	los, his, states, outputs, named := completeArgs(completions)
	args := []any{"plan", los, his, states, outputs, e.repo.owner, named}
	checkPagesIn(t, tx, e, planBatch, "complete", e.repo.q.completeOwn, args)
	if e.conn == nil { // in a caller's transaction, planned for its arguments
		checkPagesIn(t, tx, e, planBatch, "complete in a caller's transaction", e.repo.q.complete, args)
	}
	one := tasks[0].Sequence // the batch of one task, completed by completeOne
	checkPagesIn(t, tx, e, 1, "complete of one task", e.repo.q.completeOne, []any{"plan", one, int16(taskapi.Succeeded), "out", e.repo.owner})
}

// checkPages runs query, a statement on task, as e has it planned, under
// EXPLAIN ANALYZE in a transaction that is rolled back and fails unless it
// moved a batch of tasks into or out of Active (a poll or a completion)
// while touching at most pagesPerTask pages per task. It returns the pages
// touched.
func checkPages(t *testing.T, e *explaining, what, query string, args []any) int64 {
	t.Helper()
	return checkPagesIn(t, e.db(), e, planBatch, what, query, args)
}

// checkPagesIn is checkPages of a batch of n tasks on db.
func checkPagesIn(t *testing.T, db DB, e *explaining, n int, what, query string, args []any) int64 {
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
	var plan []byte
	explain, args := e.explain(t, query, args)
	if err := tx.QueryRow(ctx, explain, args...).Scan(&plan); err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	_, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if changed := active() - before; changed != n && changed != -n {
		t.Fatalf("%s changed the Active tasks by %d, want a batch of %d", what, changed, n)
	}
	if pages > pagesPerTask*int64(n) {
		t.Errorf("%s touched %d pages for %d tasks, want at most %d per task", what, pages, n, pagesPerTask)
	}
	return pages
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
	if _, ok, err := repo.Lead(t.Context(), db, "plan", time.Hour); err != nil || !ok {
		t.Fatalf("Lead: %v, %v", ok, err)
	}
	// Keep autovacuum from changing the statistics under the test.
	if _, err := db.Exec(t.Context(), `ALTER TABLE public.`+pgx.Identifier{partitionName("plan")}.Sanitize()+
		` SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	return repo
}

// loadAhead inserts n tasks in state, each with an identifier of its own
// and due only in a day or more, in one statement. Whatever their state,
// the rows take the same room.
func loadAhead(t *testing.T, db *pgxpool.Pool, n int, state taskapi.State) {
	t.Helper()
	if n == 0 {
		return
	}
	if _, err := db.Exec(t.Context(), `
INSERT INTO public.task (topic, sequence, identifier, state, input, not_before)
SELECT 'plan', nextval('public.task_sequence'), 'ahead-' || g, $2::smallint, 'in',
       (statement_timestamp() AT TIME ZONE 'utc') + interval '1 day' + g * interval '1 second'
FROM generate_series(1, $1::integer) AS g`, n, int16(state)); err != nil {
		t.Fatal(err)
	}
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
		if len(pollAndComplete(t, db, repo, 1000)) == 0 {
			return
		}
	}
}

// A generic plan, made once and kept for the life of a prepared statement,
// fits the table as it was then, and one on task locks every partition.
// Statements on task are planned per call, for the table as it is; those
// on a partition may run from a generic plan, which the plan tests prove
// good when it was made on an empty partition.
func TestStatementsOnTaskAreNeverGeneric(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, repo, conn := planConn(t)
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
	generic := 0
	for statement, made := range preparedOnServer(t, db) {
		onTask := string(partitionedOf(statement, repo.schema+".task")) != statement
		switch {
		case onTask && made.generic > 0:
			t.Errorf("ran from a generic plan on task:%s", statement)
		case made.generic > 0:
			generic++
		}
	}
	t.Logf("%d statements on the partition ran from generic plans", generic) // for the record, in -v
}
