package taskansi_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// A poll under limits beside one identifier's backlog of limitedBacklog
// Ready tasks (and a few quiet identifiers) must, on PostgreSQL with the
// server's default jit = on, not be compiled by JIT in any of its
// statements, and touch at most limitedFactor times the pages of the same
// poll of a topic without limits: fresh, with statistics, and after
// consumption (limitedConsumed of the backlog polled and completed first),
// before and after a VACUUM ANALYZE. taskansi's poll is several statements
// (and on a limited topic the partition's trigger runs its counts), so the
// pages are those that pg_stat_statements counts for every statement of
// one poll at the top level (which include those of the statements they
// run, the trigger's), in a transaction that is rolled back; the costliest
// three are logged, for the record.
const (
	limitedBacklog  = 100_000
	limitedQuiet    = 5  // quiet identifiers
	limitedPerQuiet = 20 // tasks of each
	limitedConsumed = 5000
	limitedFactor   = 2
	limitedSize     = 5 // the poll of issue 40
)

func TestLimitedPollsStayCheapOnPostgres(t *testing.T) {
	if racedetector.Enabled {
		t.Skip("the plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	cases := []struct {
		name   string
		limits taskapi.Limits
	}{
		{"without limits", taskapi.Limits{}},
		{"active limit", taskapi.Limits{Active: 50}},
		{"keyed", taskapi.Limits{Active: 50, PerIdentifier: 2}},
	}
	plain := map[string]int64{} // by stage
	for _, c := range cases {
		db, admin := statementsServer(t)
		repo, err := taskansi.New(taskansi.Postgres, "plan")
		if err != nil {
			t.Fatal(err)
		}
		loadLimitedBacklog(t, db, repo)
		if c.limits != (taskapi.Limits{}) {
			if err := repo.SetLimits(t.Context(), db, "plan", c.limits); err != nil {
				t.Fatal(err)
			}
		}
		for _, stage := range []string{"fresh", "analyzed", "consumed", "vacuumed"} {
			switch stage {
			case "analyzed":
				mustExec(t, db, "ANALYZE public.task")
			case "consumed":
				consumeBacklog(t, db, repo)
			case "vacuumed":
				mustExec(t, db, "VACUUM ANALYZE public.task")
			}
			pages, jit := pollStatements(t, db, admin, repo)
			t.Logf("%s, %s: %d pages, %d functions compiled", c.name, stage, pages, jit) // for the record, in -v
			if jit > 0 {
				t.Errorf("%s, %s: the poll's statements were compiled by JIT (%d functions)", c.name, stage, jit)
			}
			if c.limits == (taskapi.Limits{}) {
				plain[stage] = pages
			} else if pages > limitedFactor*plain[stage] {
				t.Errorf("%s, %s: the poll touched %d pages, want at most %d times the %d of a poll without limits",
					c.name, stage, pages, limitedFactor, plain[stage])
			}
		}
	}
}

// statementsServer starts a PostgreSQL of the test's own with
// pg_stat_statements, counting nested statements too, and returns the
// migrated database and a connection that reads the counts.
func statementsServer(t *testing.T) (db, admin *sql.DB) {
	t.Helper()
	cluster := testdb.OwnPostgres(t)
	open := func(url string) *sql.DB {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	admin = open(cluster.AdminURL())
	mustExec(t, admin, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
	if err := cluster.Restart(testdb.StopFast); err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, "ALTER SYSTEM SET pg_stat_statements.track = 'all'")
	mustExec(t, admin, "SELECT pg_reload_conf()")
	mustExec(t, admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	return open(cluster.URL()), admin
}

// loadLimitedBacklog registers the owner and the topic and inserts the
// backlog, the hot identifier's first, in one statement; the partition
// keeps autovacuum off, so that the stages set the statistics.
func loadLimitedBacklog(t *testing.T, db *sql.DB, repo *taskansi.Repository) {
	t.Helper()
	if _, err := repo.Register(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(t.Context(), db, "plan"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `
DO $$ DECLARE p regclass; BEGIN
    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'public.task'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p);
    END LOOP;
END $$`)
	mustExec(t, db, fmt.Sprintf(`
INSERT INTO public.task (topic, identifier, state, input)
SELECT 'plan', CASE WHEN g <= %d THEN 'hot' ELSE 'quiet-' || (g %% %d) END, 1, 'in'
FROM generate_series(1, %d) AS g`, limitedBacklog, limitedQuiet, limitedBacklog+limitedQuiet*limitedPerQuiet))
}

// consumeBacklog polls and completes limitedConsumed tasks, the hot
// identifier's earliest, under the topic's limits (a poll of 5 takes two
// of them): it makes the limits room for a batch, then sets them back.
func consumeBacklog(t *testing.T, db *sql.DB, repo *taskansi.Repository) {
	t.Helper()
	ctx := t.Context()
	all, err := repo.Limits(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	limits, limited := all["plan"]
	if limited {
		if err := repo.SetLimits(ctx, db, "plan", taskapi.Limits{Active: 500, PerIdentifier: 500 * min(1, limits.PerIdentifier)}); err != nil {
			t.Fatal(err)
		}
	}
	for done := 0; done < limitedConsumed; done += 500 {
		tasks, err := repo.Poll(ctx, db, "plan", 500)
		if err != nil || len(tasks) != 500 {
			t.Fatalf("consume: Poll = %d tasks, %v", len(tasks), err)
		}
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		if err := repo.Complete(ctx, db, "plan", completions...); err != nil {
			t.Fatal(err)
		}
	}
	if limited {
		if err := repo.SetLimits(ctx, db, "plan", limits); err != nil {
			t.Fatal(err)
		}
	}
}

// pollStatements polls limitedSize tasks in a transaction that is rolled
// back and returns the pages that its statements touched, hit or read,
// and the functions that JIT compiled for them, as pg_stat_statements
// counts them.
func pollStatements(t *testing.T, db, admin *sql.DB, repo *taskansi.Repository) (pages, jit int64) {
	t.Helper()
	ctx := t.Context()
	mustExec(t, admin, "SELECT pg_stat_statements_reset()")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := repo.Poll(ctx, tx, "plan", limitedSize)
	_ = tx.Rollback()
	if err != nil || len(tasks) == 0 {
		t.Fatalf("Poll = %d tasks, %v", len(tasks), err)
	}
	err = admin.QueryRowContext(ctx, `
SELECT coalesce(sum(shared_blks_hit + shared_blks_read) FILTER (WHERE toplevel), 0)::bigint, coalesce(sum(jit_functions), 0)::bigint
FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'`).Scan(&pages, &jit)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := admin.QueryContext(ctx, `SELECT shared_blks_hit + shared_blks_read, calls, left(regexp_replace(query, '\s+', ' ', 'g'), 160) FROM pg_stat_statements WHERE toplevel AND query NOT LIKE '%pg_stat_statements%' ORDER BY 1 DESC LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, calls int64
		var query string
		if err := rows.Scan(&n, &calls, &query); err != nil {
			t.Fatal(err)
		}
		t.Logf("   %d pages, %d calls: %s", n, calls, query) // for the record, in -v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pages, jit
}

// mustExec runs a statement on db.
func mustExec(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
