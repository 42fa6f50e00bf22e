package taskansi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// On SQLite CancelIdentifier must read the Ready tasks of an identifier by
// task_keyed, by topic, state and identifier, with or without statistics:
// the identifier index would walk the identifier's finished tasks too,
// however many.
func TestSQLiteCancelIdentifierReadsTheKeyedIndex(t *testing.T) {
	if racedetector.Enabled {
		// Its load takes SQLite's engine 12 s under the detector on a
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
	for _, topic := range []string{"plan", "a"} {
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `
INSERT INTO task (topic, identifier, input, state, created)
SELECT ?, CASE WHEN g <= 2000 THEN 'hot' ELSE 'k' || (g % 100) END, 'in', CASE WHEN g % 10 = 0 THEN 1 ELSE 6 END, '2026-01-01'
FROM (WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 5000) SELECT g FROM s)`, topic); err != nil {
			t.Fatal(err)
		}
	}
	for _, statistics := range []string{"none", "fresh"} {
		if statistics == "fresh" {
			if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for what, query := range map[string]string{"lock": repo.q.cancelIdentifierLock, "read": repo.q.cancelIdentifierRead} {
			what = fmt.Sprintf("statistics %s, %s", statistics, what)
			plan := sqlitePlan(t, db, what, query, []any{"plan", "hot"})
			if joined := strings.Join(plan, "; "); !strings.Contains(joined, "INDEX task_keyed (topic=? AND state=? AND identifier=?)") {
				t.Errorf("%s does not read task_keyed by identifier: %s", what, joined)
			}
		}
	}
}
