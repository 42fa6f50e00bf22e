package taskansi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// On SQLite the statements of a poll under limits must read the topic's
// tasks by task_keyed, by topic and state (and identifier), with or without
// statistics: written with "state <= 1", the predicate of the partial
// index, SQLite read it by (topic, state < 2) alone, over every Ready task
// of the topic, however many an identifier at its limit had; and the
// identifier index walks the tasks that have finished too.
func TestSQLiteLimitsReadTheKeyedIndex(t *testing.T) {
	if racedetector.Enabled {
		// Its load takes SQLite's engine 61 s under the detector on a
		// busy machine, and the plan does not depend on it.
		t.Skip("SQLite's plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	ctx := t.Context()
	db := testdb.SQLite(t)
	repo, err := New(SQLite, "plan")
	if err != nil {
		t.Fatal(err)
	}
	// A hot identifier's backlog and a hundred others, with tasks that
	// have finished, in each of a few topics, so that statistics see a
	// topic narrow the tasks.
	for _, topic := range []string{"plan", "a", "b", "c"} {
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `
INSERT INTO task (topic, identifier, input, state, created)
SELECT ?, CASE WHEN g <= 2000 THEN 'hot' ELSE 'k' || (g % 100) END, 'in', CASE WHEN g % 50 = 0 THEN 0 WHEN g > 3000 THEN 3 ELSE 1 END, '2026-01-01'
FROM (WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 10000) SELECT g FROM s)`, topic); err != nil {
			t.Fatal(err)
		}
	}
	branch := strings.ReplaceAll(repo.q.limitsBranch[taskapi.FIFO][1], "{list}", "?")
	statements := []struct {
		what, query string
		args        []any
	}{
		{"Active tasks", repo.q.limitsHeld[0], []any{"plan"}},
		{"identifiers", repo.q.limitsKeys[0], []any{"plan", "", "plan", keysPage}},
		{"an identifier's candidates", branch, repo.args("plan", "hot", now{}, "plan", int(taskapi.Active), 2)},
	}
	for _, statistics := range []string{"none", "fresh"} {
		if statistics == "fresh" {
			if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range statements {
			what := fmt.Sprintf("statistics %s, %s", statistics, s.what)
			// k and r are the statements' own reads of the topic's tasks;
			// e and b the conditions', which probe the identifier index.
			for _, line := range sqlitePlan(t, db, what, s.query, s.args) {
				reads := strings.HasPrefix(line, "SEARCH k ") || strings.HasPrefix(line, "SEARCH r ") || strings.HasPrefix(line, "SEARCH task ")
				if reads && !strings.Contains(line, "INDEX task_keyed (topic=? AND state=?") {
					t.Errorf("%s reads %q", what, line)
				}
			}
		}
	}
}
