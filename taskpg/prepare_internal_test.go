package taskpg

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// plansMade counts the plans the server made of a prepared statement.
type plansMade struct{ custom, generic int64 }

// preparedOnServer returns the plans made of each statement that taskpg
// prepared on conn, by the statement's text.
func preparedOnServer(t *testing.T, conn *pgx.Conn) map[string]plansMade {
	t.Helper()
	rows, _ := conn.Query(t.Context(), `SELECT statement, custom_plans, generic_plans FROM pg_prepared_statements
WHERE name LIKE 'taskrepo\_%'`, pgx.QueryExecModeSimpleProtocol)
	plans := map[string]plansMade{}
	var (
		statement string
		made      plansMade
	)
	if _, err := pgx.ForEachRow(rows, []any{&statement, &made.custom, &made.generic}, func() error {
		plans[statement] = made
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return plans
}

// planConn returns a database set up by planSetup, its repository, and a
// connection of its pool, released when the test ends.
func planConn(t *testing.T) (*pgxpool.Pool, *Repository, *pgxpool.Conn) {
	t.Helper()
	pool := testdb.Postgres(t)
	repo := planSetup(t, pool)
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	return pool, repo, conn
}

// pushPollComplete pushes a task to topic, polls it and completes it, on db.
func pushPollComplete(ctx context.Context, t *testing.T, repo *Repository, db DB, topic string) {
	t.Helper()
	if _, err := repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: "id"}); err != nil {
		t.Fatal(err)
	}
	tasks, err := repo.Poll(ctx, db, topic, 10)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("Poll: %v, %v", tasks, err)
	}
	if err := repo.Complete(ctx, db, topic, taskapi.Completion{Task: tasks[0], Decision: taskapi.Decision{Result: taskapi.Success}}); err != nil {
		t.Fatal(err)
	}
}

// A round trip of taskpg's own sends its statements prepared: those on
// task after setCustomPlans, those on the topic's partition after
// setGenericPlans (see partition.go); and it leaves the session's settings
// as they were.
func TestOwnRoundTripsArePrepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, repo, conn := planConn(t)
	for range 3 {
		pushPollComplete(ctx, t, repo, conn.Conn(), "plan")
	}
	plans := preparedOnServer(t, conn.Conn())
	for _, p := range []partitioned{repo.q.onPartition.poll[taskapi.FIFO][0], repo.q.onPartition.completeOne} {
		sql := p.on(repo.schema, "plan")
		if made := plans[sql]; made.custom != 0 || made.generic != 3 {
			t.Errorf("%+v plans of the prepared statement, want 3 generic ones:%s", made, sql)
		}
	}
	for _, sql := range []string{setCustomPlans, setGenericPlans} {
		if _, ok := plans[sql]; !ok {
			t.Errorf("not prepared:%s", sql)
		}
	}
	var mode, seqscan string
	if err := conn.QueryRow(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')`).Scan(&mode, &seqscan); err != nil ||
		mode != "auto" || seqscan != "on" {
		t.Errorf("plan_cache_mode, enable_seqscan after the calls = %q, %q, %v; want the session's own, auto and on", mode, seqscan, err)
	}
}

// A connection whose server lost one of taskpg's statements between two
// calls (DEALLOCATE) gets unnamed statements from then on, and the call
// does what it says, once. (DEALLOCATE ALL and DISCARD ALL would take pgx's
// own statement cache along, which serves the push here.)
func TestLostPreparedStatementsGiveWayToUnnamedOnes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, repo, conn := planConn(t)
	for round := range 4 {
		if round > 0 {
			if _, err := conn.Exec(ctx, `DO $$ DECLARE s record; BEGIN
FOR s IN SELECT name FROM pg_prepared_statements WHERE name LIKE 'taskrepo\_%' LOOP
    EXECUTE format('DEALLOCATE %I', s.name);
END LOOP; END $$`, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatal(err)
			}
		}
		pushPollComplete(ctx, t, repo, conn.Conn(), "plan")
		if prepared := preparedOnServer(t, conn.Conn()); round > 0 && len(prepared) > 0 {
			t.Errorf("round %d: prepared again after a statement was lost: %v", round, prepared)
		}
	}
	var done int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM public.task WHERE topic = 'plan' AND state = $1`,
		int16(taskapi.Succeeded)).Scan(&done); err != nil || done != 4 {
		t.Fatalf("%d tasks Succeeded, %v; want 4", done, err)
	}
}

// Inside a caller's transaction, taskpg prepares nothing: a statement the
// server had lost would abort the caller's transaction.
func TestCallersTransactionsGetUnnamedStatements(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, repo, conn := planConn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	before := preparedOnServer(t, conn.Conn())
	pushPollComplete(ctx, t, repo, tx, "plan")
	for sql := range preparedOnServer(t, conn.Conn()) {
		if _, ok := before[sql]; !ok {
			t.Errorf("prepared inside the caller's transaction:%s", sql)
		}
	}
}

// BenchmarkPrepareKnownStatement times what every call of a round trip of
// taskpg's own pays to find a statement that its connection prepared
// already: the plain poll, a statement of kilobytes. Hashing the text for
// its name cost 2 µs a call here (more with the caches cold, as between
// the polls of a quiet topic), finding it by its text 0.1 µs.
func BenchmarkPrepareKnownStatement(b *testing.B) {
	pool := testdb.Postgres(b)
	conn, err := pool.Acquire(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	repo, err := New("bench")
	if err != nil {
		b.Fatal(err)
	}
	sql, _ := repo.pollStatement(check.Polling{}, false)
	oids := []uint32{25, 25, 20, 21}
	if _, err := prepare(b.Context(), conn.Conn().PgConn(), sql, oids); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := prepare(b.Context(), conn.Conn().PgConn(), sql, oids); err != nil {
			b.Fatal(err)
		}
	}
}
