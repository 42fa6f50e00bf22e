package taskansi

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// A page of a topic's tasks filtered by a state that few tasks are in, and
// the count of such tasks, must read the partial index of those states,
// not walk the topic. On SQLite the test reads the plan (EXPLAIN QUERY
// PLAN names the index). On PostgreSQL it counts the pages that a generic
// plan touches, the plan of a statement prepared once and run many times
// (database/sql's statement cache), which knows no values: statesFew tasks
// of each state below statesMass SUCCEEDED ones, where a walk of the topic
// touches thousands of pages and the index a few. taskpg's
// TestPagesByRareStatesReadTheirIndex counts its own statements so.
const (
	statesMass  = 100_000
	statesFew   = 5
	statesPages = 40
)

// statesFiltered are the filters measured, with the index each must read:
// each state that a partial index holds, and the failures view's two.
var statesFiltered = []struct {
	states []taskapi.State
	index  string
}{
	{[]taskapi.State{taskapi.Active}, "task_active"},
	{[]taskapi.State{taskapi.Expired}, "task_rare"},
	{[]taskapi.State{taskapi.Failed}, "task_rare"},
	{[]taskapi.State{taskapi.Suspended}, "task_rare"},
	{[]taskapi.State{taskapi.Filtered}, "task_rare"},
	{[]taskapi.State{taskapi.Recreated}, "task_rare"},
	{[]taskapi.State{taskapi.Redundant}, "task_rare"},
	{[]taskapi.State{taskapi.Cancelled}, "task_rare"},
	{[]taskapi.State{taskapi.Failed, taskapi.Suspended}, "task_rare"},
}

// statesLoad fills topic "plan" of db: statesFew tasks of each state of
// statesFiltered, then statesMass SUCCEEDED ones, in one statement each.
func statesLoad(t *testing.T, db *sql.DB, repo *Repository, series string) {
	t.Helper()
	ctx := t.Context()
	if _, err := repo.Initialize(ctx, db, "plan"); err != nil {
		t.Fatal(err)
	}
	load := func(n int, state taskapi.State) {
		t.Helper()
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`
INSERT INTO task (topic, identifier, input, state, owner)
SELECT 'plan', 'id-%d-' || g, 'in', %d, 'someone' FROM %s AS g`, state, state, fmt.Sprintf(series, n))); err != nil {
			t.Fatal(err)
		}
	}
	for _, state := range []taskapi.State{taskapi.Active, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
		taskapi.Filtered, taskapi.Recreated, taskapi.Redundant, taskapi.Cancelled} {
		load(statesFew, state)
	}
	load(statesMass, taskapi.Succeeded)
}

// sqliteUnplanned: SQLite's planner walks a topic in sequence order for
// the ACTIVE tasks (task_active holds those of every topic, by owner: no
// narrower than the walk to SQLite), and, without statistics (ANALYZE), for
// a filter on several states, whose entries of task_rare would have to be
// sorted. The test holds SQLite to the single states of task_rare, and to
// several of them once it has statistics.
func TestSQLitePagesByRareStatesReadTheirIndex(t *testing.T) {
	if racedetector.Enabled {
		// Its load and ANALYZE take SQLite's engine 80 s under the
		// detector, and the plan does not depend on it: .ci/run's heavy
		// step runs it without.
		t.Skip("SQLite's plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	db := testdb.SQLite(t)
	repo, err := New(SQLite, "plan")
	if err != nil {
		t.Fatal(err)
	}
	statesLoad(t, db, repo, `(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < %d) SELECT g FROM s)`)
	for _, statistics := range []string{"none", "fresh"} {
		if statistics == "fresh" {
			if _, err := db.ExecContext(t.Context(), `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range statesFiltered {
			if f.index != "task_rare" || len(f.states) > 1 && statistics == "none" {
				continue // see sqliteUnplanned
			}
			query, args := repo.pageStatement("plan", taskapi.Listing{States: f.states}, taskapi.MaxSequence, 51, taskapi.Backward)
			sqlitePlanUses(t, db, fmt.Sprintf("statistics %s, page of %v", statistics, f.states), query, args, f.index)
			query, args = repo.countStatement(taskapi.Total, []string{"plan"}, taskapi.Counting{States: f.states}, taskapi.Unbounded)
			sqlitePlanUses(t, db, fmt.Sprintf("statistics %s, count of %v", statistics, f.states), query, args, f.index)
		}
	}
}

// sqlitePlanUses fails t unless SQLite's plan of query reads index.
func sqlitePlanUses(t *testing.T, db *sql.DB, what, query string, args []any, index string) {
	t.Helper()
	plan := sqlitePlan(t, db, what, query, args)
	if !strings.Contains(strings.Join(plan, "\n"), "INDEX "+index+" ") {
		t.Errorf("%s does not read %s: %s", what, index, strings.Join(plan, "; "))
	}
}

// sqlitePlan returns the lines of SQLite's plan of query, and logs them.
func sqlitePlan(t *testing.T, db *sql.DB, what, query string, args []any) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %s", what, strings.Join(plan, "; ")) // for the record, in -v
	return plan
}
