package taskpg

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// limitBacklog is the Ready tasks of the topic whose polls under limits
// are counted: a poll with a limit must touch at most limitFactor times the
// pages of the same poll of a topic without limits.
const (
	limitBacklog = 100_000
	limitFactor  = 2
)

// TestLimitedPollsStayCheap counts the pages of a poll of planBatch tasks
// in a backlog of limitBacklog Ready tasks, under each kind of limit, with
// room and at the limit, against the same poll without limits, with no
// statistics and with fresh ones.
func TestLimitedPollsStayCheap(t *testing.T) {
	if racedetector.Enabled {
		// Its backlog of 100,000 tasks took 28 s of a busy machine, and a
		// plan does not depend on the detector.
		t.Skip("the plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	cases := []struct {
		name   string
		keys   int // identifiers of the backlog, in turn
		hot    int // tasks of one identifier ahead of the others
		limits taskapi.Limits
		active int // tasks polled first, up to the limits
		want   int // tasks the counted poll takes
	}{
		{"without limits", 50, 0, taskapi.Limits{}, 0, planBatch},
		{"active limit with room", 50, 0, taskapi.Limits{Active: 1000}, 0, planBatch},
		{"active limit reached", 50, 0, taskapi.Limits{Active: 100}, 100, 0},
		{"per identifier with room", 50, 0, taskapi.Limits{PerIdentifier: 2}, 0, planBatch},
		{"per identifier, every key at it", 50, 0, taskapi.Limits{PerIdentifier: 2}, 100, 0},
		{"per identifier, a key per task", limitBacklog, 0, taskapi.Limits{PerIdentifier: 1}, 0, planBatch},
		{"per identifier, a hot key at it ahead", 50, limitBacklog - 200, taskapi.Limits{PerIdentifier: 1}, 1, 50},
	}
	var plain [2]int64 // the pages of the poll without limits, by statistics
	for _, c := range cases {
		db := testdb.Postgres(t)
		repo := planSetup(t, db)
		loadKeys(t, db, c.hot, c.keys)
		if c.limits != (taskapi.Limits{}) {
			if err := repo.SetLimits(t.Context(), db, "plan", c.limits); err != nil {
				t.Fatal(err)
			}
		}
		if c.active > 0 {
			if got, err := repo.Poll(t.Context(), db, "plan", c.active); err != nil || len(got) != c.active {
				t.Fatalf("%s: Poll(%d) = %d tasks, %v", c.name, c.active, len(got), err)
			}
		}
		mode := plainPoll
		switch {
		case c.limits.PerIdentifier > 0:
			mode = keyedPoll
		case c.limits.Active > 0:
			mode = limitedPoll
		}
		for analyzed, stats := range []string{"no statistics", "fresh statistics"} {
			if analyzed == 1 {
				if _, err := db.Exec(t.Context(), "ANALYZE public.task"); err != nil {
					t.Fatal(err)
				}
			}
			pages := limitedPollPages(t, db, repo, mode, c.want)
			t.Logf("%s, %s: %d pages", c.name, stats, pages) // for the record, in -v
			if mode == plainPoll {
				plain[analyzed] = pages
			} else if pages > limitFactor*plain[analyzed] {
				t.Errorf("%s, %s: the poll touched %d pages, want at most %d times the %d of a poll without limits",
					c.name, stats, pages, limitFactor, plain[analyzed])
			}
		}
	}
}

// limitedPollPages returns the pages that a FIFO poll of planBatch in mode
// touches, in a transaction that is rolled back, after the topic's limit
// lock as the poll takes it, and checks that it took want tasks.
func limitedPollPages(t *testing.T, db *pgxpool.Pool, repo *Repository, mode pollMode, want int) int64 {
	t.Helper()
	ctx := t.Context()
	tx, rollback := begin(t, db)
	defer rollback()
	if mode != plainPoll {
		if _, err := tx.Exec(ctx, limitLock, "public.plan", "plan", fmt.Sprint(int(mode))); err != nil {
			t.Fatal(err)
		}
	}
	before := activeTasks(t, tx)
	var plan []byte
	err := tx.QueryRow(ctx, testdb.ExplainPrefix+repo.q.poll[mode][taskapi.FIFO][0],
		pgx.QueryExecModeExec, "plan", repo.owner, planBatch).Scan(&plan)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	_, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatal(err)
	}
	if took := activeTasks(t, tx) - before; took != want {
		t.Errorf("the poll took %d tasks, want %d", took, want)
	}
	return pages
}

// activeTasks counts the Active tasks that tx sees.
func activeTasks(t *testing.T, tx pgx.Tx) int {
	t.Helper()
	var n int
	if err := tx.QueryRow(t.Context(), "SELECT count(*) FROM public.task WHERE state = 0").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// loadKeys inserts limitBacklog Ready tasks, in one statement: hot tasks of
// the identifier "hot" first, then the others with keys identifiers in
// turn.
func loadKeys(t *testing.T, db *pgxpool.Pool, hot, keys int) {
	t.Helper()
	if _, err := db.Exec(t.Context(), `
INSERT INTO public.task (topic, sequence, identifier, state, input)
SELECT 'plan', nextval('public.task_sequence'), CASE WHEN g <= $2 THEN 'hot' ELSE 'key-' || (g % $3::integer) END, 1, 'in'
FROM generate_series(1, $1::integer) AS g`, limitBacklog, hot, keys); err != nil {
		t.Fatal(err)
	}
}
