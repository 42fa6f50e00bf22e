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
// statistics and with fresh ones. The cases "after consumption" first poll
// and complete part of the backlog (see consume), which leaves the entries
// of the consumed tasks' row versions dead in the indexes, and count again
// after a VACUUM ANALYZE; they compare with the poll without limits after
// the same consumption.
func TestLimitedPollsStayCheap(t *testing.T) {
	if racedetector.Enabled {
		// Its backlog of 100,000 tasks took 28 s of a busy machine, and a
		// plan does not depend on the detector.
		t.Skip("the plans are checked in a build without the race detector (.ci/run heavy)")
	}
	// Not parallel: the dead entries that consumption leaves are marked
	// dead, and skipped, only once no snapshot of the server may still see
	// their rows, and the loads of the plan tests beside it kept snapshots
	// that old (the keyed poll touched 4,579 pages, not 2,182).
	cases := []struct {
		name     string
		keys     int // identifiers of the backlog, in turn
		hot      int // tasks of one identifier ahead of the others
		limits   taskapi.Limits
		consumed bool // part of the backlog was polled and completed first
		active   int  // tasks polled first, up to the limits
		want     int  // tasks the counted poll takes
	}{
		{"without limits", 50, 0, taskapi.Limits{}, false, 0, planBatch},
		{"active limit with room", 50, 0, taskapi.Limits{Active: 1000}, false, 0, planBatch},
		{"active limit reached", 50, 0, taskapi.Limits{Active: 100}, false, 100, 0},
		{"per identifier with room", 50, 0, taskapi.Limits{PerIdentifier: 2}, false, 0, planBatch},
		{"per identifier, every key at it", 50, 0, taskapi.Limits{PerIdentifier: 2}, false, 100, 0},
		{"per identifier, a key per task", limitBacklog, 0, taskapi.Limits{PerIdentifier: 1}, false, 0, planBatch},
		{"per identifier, a hot key at it ahead", 50, limitBacklog - 200, taskapi.Limits{PerIdentifier: 1}, false, 1, 50},
		{"without limits, after consumption", 50, consumedHot, taskapi.Limits{}, true, 0, planBatch},
		{"active limit with room, after consumption", 50, consumedHot, taskapi.Limits{Active: 1000}, true, 0, planBatch},
		{"per identifier, a hot key at it ahead, after consumption", 50, consumedHot, taskapi.Limits{PerIdentifier: 1}, true, 1, 50},
		{"both limits, a hot key at it, after consumption", 50, consumedHot, taskapi.Limits{Active: 50, PerIdentifier: 2}, true, 2, 48},
	}
	plain := map[string]int64{} // the pages of the poll without limits, by consumption and statistics
	for _, c := range cases {
		db := testdb.Postgres(t)
		repo := planSetup(t, db)
		loadKeys(t, db, c.hot, c.keys)
		if c.consumed {
			consume(t, db, repo, c.limits)
		}
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
		stages := []string{"no statistics", "fresh statistics"}
		if c.consumed {
			stages = append(stages, "vacuumed")
		}
		for _, stage := range stages {
			switch stage {
			case "fresh statistics":
				if _, err := db.Exec(t.Context(), "ANALYZE public.task"); err != nil {
					t.Fatal(err)
				}
			case "vacuumed":
				if _, err := db.Exec(t.Context(), "VACUUM ANALYZE public.task"); err != nil {
					t.Fatal(err)
				}
			}
			pages := limitedPollPages(t, db, repo, mode, c.want)
			t.Logf("%s, %s: %d pages", c.name, stage, pages) // for the record, in -v
			key := fmt.Sprint(c.consumed, stage)
			if mode == plainPoll {
				plain[key] = pages
			} else if pages > limitFactor*plain[key] {
				t.Errorf("%s, %s: the poll touched %d pages, want at most %d times the %d of a poll without limits",
					c.name, stage, pages, limitFactor, plain[key])
			}
		}
	}
}

// The consumption of the cases "after consumption": a hot identifier's
// consumedHot tasks come first, and consume polls and completes
// consumedFirst of the backlog in FIFO order (the hot identifier's) and
// consumedLast in LIFO order (the others').
const (
	consumedHot   = limitBacklog - 10_000
	consumedFirst = 5000
	consumedLast  = 2000
)

// consume polls and completes tasks of the backlog (see consumedHot): in
// batches under limits as the case has them but with room for a batch, so
// that the indexes that the limits bring have the dead entries of the
// consumed tasks too, then one poll of planBatch under the case's limits,
// as the consumers of a limited topic poll. Each poll under limits marks
// the dead entries it passes, so that the next skips them; the relaxed
// polls pass fewer than polls at the limits do.
func consume(t *testing.T, db *pgxpool.Pool, repo *Repository, limits taskapi.Limits) {
	t.Helper()
	const batch = 250
	relaxed := limits
	if relaxed.Active > 0 {
		relaxed.Active = batch
	}
	if relaxed.PerIdentifier > 0 {
		relaxed.PerIdentifier = batch
	}
	for _, part := range []struct {
		n      int
		size   int
		order  taskapi.Order
		limits taskapi.Limits
	}{{consumedFirst, batch, taskapi.FIFO, relaxed}, {consumedLast, batch, taskapi.LIFO, relaxed}, {1, planBatch, taskapi.FIFO, limits}} {
		if part.limits != (taskapi.Limits{}) {
			if err := repo.SetLimits(t.Context(), db, "plan", part.limits); err != nil {
				t.Fatal(err)
			}
		}
		for done := 0; done < part.n; done += part.size {
			tasks, err := repo.Poll(t.Context(), db, "plan", part.size, part.order)
			if err != nil || len(tasks) == 0 {
				t.Fatalf("consume: Poll(%d) = %d tasks, %v", part.size, len(tasks), err)
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
}

// limitedPollPages returns the pages that a FIFO poll of planBatch in mode
// touches, in a transaction that is rolled back, after the topic's limit
// lock as the poll takes it, and checks that it took want tasks.
func limitedPollPages(t *testing.T, db *pgxpool.Pool, repo *Repository, mode pollMode, want int) int64 {
	t.Helper()
	ctx := t.Context()
	tx, rollback := begin(t, db)
	defer rollback()
	jitOff, jitBack := unjitted(tx, mode) // as Poll sends them in a caller's transaction
	for _, s := range jitOff {
		if _, err := tx.Exec(ctx, s.sql); err != nil {
			t.Fatal(err)
		}
	}
	if mode != plainPoll {
		if _, err := tx.Exec(ctx, limitLock, "public.plan", "plan", fmt.Sprint(int(mode))); err != nil {
			t.Fatal(err)
		}
	}
	before := activeTasks(t, tx)
	var plan []byte
	args := []any{pgx.QueryExecModeExec, "plan", repo.owner, planBatch}
	if floorable(mode, taskapi.FIFO, false) {
		args = append(args, int64(0)) // from the index's start, as in a caller's transaction
	}
	err := tx.QueryRow(ctx, testdb.ExplainPrefix+repo.q.poll[mode][taskapi.FIFO][0], args...).Scan(&plan)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	_, pages, err := testdb.Pages(plan)
	if err != nil {
		t.Fatal(err)
	}
	jit, ms, err := testdb.Compiled(plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("poll mode %d: %.1f ms", mode, ms) // for the record, in -v: time is not asserted
	if jit {
		t.Errorf("the poll in mode %d was compiled with JIT (%.1f ms): the server's default jit = on prices it past jit_above_cost", mode, ms)
	}
	for _, s := range jitBack {
		if _, err := tx.Exec(ctx, s.sql); err != nil {
			t.Fatal(err)
		}
	}
	var jitAfter, bitmapAfter string
	err = tx.QueryRow(ctx, "SELECT current_setting('jit'), current_setting('enable_bitmapscan')").Scan(&jitAfter, &bitmapAfter)
	if err != nil || jitAfter != "on" || bitmapAfter != "on" {
		t.Errorf("jit and enable_bitmapscan after the poll in the caller's transaction = %q, %q (%v), want the caller's own, on",
			jitAfter, bitmapAfter, err)
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
