package taskpg

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// A page of a topic's tasks filtered by a state that few tasks are in, and
// the count of such tasks, must read the index of those states, not walk
// the topic. The test puts statesFew tasks of each such state at the low
// end of a topic, below statesMass SUCCEEDED ones, and counts the pages
// that a page from the newest task down (the dashboard's first page) and a
// count touch: a walk of the topic touches thousands (the whole primary
// key and table), the index a few. It does so without statistics and with
// fresh ones. (ACTIVE tasks are paged but not counted: no page counts
// them, and without statistics the planner scans the topic for them.)
const (
	statesMass  = 100_000
	statesFew   = 5
	statesPages = 40
)

// statesFiltered are the filters measured: each state that a partial
// index holds, and the failures view's two.
var statesFiltered = [][]taskapi.State{
	{taskapi.Active}, {taskapi.Expired}, {taskapi.Failed}, {taskapi.Suspended},
	{taskapi.Filtered}, {taskapi.Recreated}, {taskapi.Redundant}, {taskapi.Cancelled},
	{taskapi.Failed, taskapi.Suspended},
}

func TestPagesByRareStatesReadTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testdb.Postgres(t)
	repo := planSetup(t, db)
	for _, state := range []taskapi.State{taskapi.Active, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
		taskapi.Filtered, taskapi.Recreated, taskapi.Redundant, taskapi.Cancelled} {
		loadAhead(t, db, statesFew, state)
	}
	loadAhead(t, db, statesMass, taskapi.Succeeded)
	for _, statistics := range []string{"none", "fresh"} {
		if statistics == "fresh" {
			if _, err := db.Exec(ctx, `ANALYZE public.task`); err != nil {
				t.Fatal(err)
			}
		}
		for _, states := range statesFiltered {
			what := fmt.Sprintf("statistics %s, page of %v", statistics, states)
			sql, args := repo.pageStatement("plan", taskapi.Listing{States: states}, taskapi.MaxSequence, 51, taskapi.Backward)
			statesCheck(t, db, what, sql, args, int64(statesFew*len(states)))
			if states[0] == taskapi.Active {
				continue // counted by no page; without statistics the planner scans for it
			}
			what = fmt.Sprintf("statistics %s, count of %v", statistics, states)
			sql, args = repo.countStatement(taskapi.Total, []string{"plan"}, taskapi.Counting{States: states}, taskapi.Unbounded)
			statesCheck(t, db, what, sql, args, int64(len(states)))
		}
	}
}

// statesCheck runs query under EXPLAIN ANALYZE and fails t unless it
// returned rows rows touching at most statesPages pages.
func statesCheck(t *testing.T, db *pgxpool.Pool, what, query string, args []any, rows int64) {
	t.Helper()
	var plan []byte
	if err := db.QueryRow(t.Context(), testdb.ExplainPrefix+query, append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&plan); err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	n, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %d rows, %d pages", what, n, pages) // for the record, in -v
	if n != rows {
		t.Errorf("%s returned %d rows, want %d", what, n, rows)
	}
	if pages > statesPages {
		t.Errorf("%s touched %d pages among %d tasks, want at most %d: it walks the topic", what, pages, statesMass, statesPages)
	}
}
