package taskansi

import (
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// A poll's cost must not depend on how many tasks wait for their time. The
// test counts the pages that a poll's candidates touch on PostgreSQL
// (EXPLAIN (ANALYZE, BUFFERS), in a transaction that is rolled back) in a
// topic where planOld deferred tasks that are not yet due come before the
// due ones ("waiting"), against the same due tasks without them: a plan
// that walks over the waiting tasks touches a thousand pages more or so,
// one on the indexes of the two branches a few (the index of deferred
// tasks is deeper). An unconditional poll is held to the due tasks alone
// ("alone"). The conditions probe the identifier index for every
// candidate, and that index grows deeper with every task of the topic,
// whatever its state, so a conditional poll is held to a topic where as
// many tasks that have finished come first ("finished"). Pages, unlike
// times, do not depend on how busy the machine is. taskpg's plan test
// counts pages the same way. NextDue reads one entry of the index of
// deferred tasks, whatever their number: it must touch at most planSlack
// pages in every topic, also with the planOld tasks that wait.
const (
	planOld   = 100_000
	planDue   = 1000 // half never deferred, half deferred and due
	planBatch = 100
	planSlack = 10 // pages
)

// planTopics are the topics of the test with the state and time of the
// planOld tasks that come before their due ones (none for "alone").
var planTopics = map[string]string{
	"alone":    "",
	"finished": `6, NULL`,
	"waiting":  `1, (statement_timestamp() AT TIME ZONE 'utc') + interval '1 day'`,
}

func TestPollNeverWalksOverTasksThatWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := planSetup(t)
	for topic, columns := range planTopics {
		if columns != "" { // in one statement
			if _, err := db.ExecContext(ctx, fmt.Sprintf(`
INSERT INTO public.task (topic, identifier, input, state, not_before)
SELECT '%s', 'old-' || g, 'in', %s FROM generate_series(1, %d) AS g`, topic, columns, planOld)); err != nil {
				t.Fatal(err)
			}
		}
		creations := make([]taskapi.Creation, planDue)
		for i := range creations {
			creations[i] = taskapi.Creation{Identifier: fmt.Sprint("due-", i), Input: "in"}
			if i%2 == 1 {
				creations[i].NotBefore = time.Now().Add(-time.Duration(i) * time.Second)
			}
		}
		if _, err := repo.Push(ctx, db, topic, taskapi.Append, creations...); err != nil {
			t.Fatal(err)
		}
	}
	for _, statistics := range []string{"none", "fresh"} {
		if statistics == "fresh" {
			if err := repo.Refresh(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		for _, order := range []taskapi.Order{taskapi.FIFO, taskapi.LIFO} {
			for _, p := range planPolls {
				p.Order = order
				pages := map[string]int64{}
				for topic := range planTopics {
					pages[topic] = pollPages(t, db, repo, topic, p)
				}
				what := fmt.Sprintf("statistics %s, poll %v %v", statistics, order, p.Condition)
				if p.AwaitRevival {
					what += " " + taskapi.AwaitRevival{}.String()
				}
				t.Logf("%s: pages %v", what, pages)
				baseline := "alone"
				if p.Condition != taskapi.Unconditional {
					baseline = "finished"
				}
				if pages["waiting"] > pages[baseline]+planSlack {
					t.Errorf("%s touched %d pages with %d tasks waiting ahead, against %d %s",
						what, pages["waiting"], planOld, pages[baseline], baseline)
				}
			}
		}
		for topic := range planTopics {
			pages := nextDuePages(t, db, repo, topic)
			t.Logf("statistics %s, next due of %s: %d pages", statistics, topic, pages)
			if pages > planSlack {
				t.Errorf("statistics %s: the next due time of %s touched %d pages, want at most %d", statistics, topic, pages, planSlack)
			}
			pages = explainedPages(t, db, repo, repo.q.reviveSpan, repo.args(topic, int(taskapi.Expired), taskapi.Inception, taskapi.MaxSequence, completedByParameter(time.Time{}), 100)...)
			t.Logf("statistics %s, revival of %s: %d pages", statistics, topic, pages)
			if pages > planSlack {
				t.Errorf("statistics %s: the revival of Expired tasks of %s, none, touched %d pages, want at most %d", statistics, topic, pages, planSlack)
			}
		}
	}
}

// nextDuePages returns the pages that NextDue's statement touches in topic,
// failing t unless NextDue finds a time exactly in the topic whose tasks
// wait.
func nextDuePages(t *testing.T, db *sql.DB, repo *Repository, topic string) int64 {
	t.Helper()
	ctx := t.Context()
	pages := explainedPages(t, db, repo, repo.q.nextDue, repo.args(topic, now{})...)
	next, err := repo.NextDue(ctx, db, topic)
	if waiting := topic == "waiting"; err != nil || next.IsZero() == waiting {
		t.Errorf("NextDue(%s) = %v, %v; want a time %v", topic, next, err, waiting)
	}
	return pages
}

// explainedPages returns the pages that query touches with args, under
// EXPLAIN ANALYZE in a transaction that is rolled back.
func explainedPages(t *testing.T, db *sql.DB, repo *Repository, query string, args ...any) int64 {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var text []byte
	if err := tx.QueryRowContext(t.Context(), repo.expand(testdb.ExplainPrefix+query), args...).Scan(&text); err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	_, pages, err := testdb.Pages(text)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	return pages
}

// planSetup opens a fresh PostgreSQL database that plans every statement
// for its arguments, registers the owner and the topics of planTopics, and
// keeps autovacuum from changing the statistics under the
// test.
func planSetup(t *testing.T) (*sql.DB, *Repository) {
	t.Helper()
	ctx := t.Context()
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	query := u.Query()
	query.Set("default_query_exec_mode", "exec")
	u.RawQuery = query.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	repo, err := New(Postgres, "plan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(ctx, db); err != nil {
		t.Fatal(err)
	}
	for topic := range planTopics {
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `
DO $$ DECLARE p regclass; BEGIN
    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'public.task'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p);
    END LOOP;
END $$`); err != nil {
		t.Fatal(err)
	}
	return db, repo
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

// pollPages returns the pages that the candidates of the poll p of
// planBatch tasks of topic touch, with the arguments Poll gives them,
// failing t unless it found a whole batch.
func pollPages(t *testing.T, db *sql.DB, repo *Repository, topic string, p check.Polling) int64 {
	t.Helper()
	ctx := t.Context()
	conditional := 0
	var blocking []any
	if states := p.Blocking(); states != nil {
		conditional = 1
		blocking = appendArgs(nil, ordinals(states)...)
	}
	query := repo.expand(testdb.ExplainPrefix+repo.q.poll[p.Order][conditional], "{list}", marks(len(blocking)))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var text []byte
	if err := tx.QueryRowContext(ctx, query, repo.pollArgs(topic, nil, blocking, planBatch)...).Scan(&text); err != nil {
		t.Fatalf("explain the poll of %s: %v", topic, err)
	}
	rows, pages, err := testdb.Pages(text)
	if err != nil {
		t.Fatalf("explain the poll of %s: %v", topic, err)
	}
	if rows != planBatch {
		t.Fatalf("the poll of %s found %d tasks, want %d", topic, rows, planBatch)
	}
	return pages
}
