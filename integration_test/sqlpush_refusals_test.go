package integration_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/edge"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// TestTaskpgPushesFromSQLAsApplicationRole runs the push cases through
// task_push_many as a role with the grants docs/operating.md lists and
// nothing more.
func TestTaskpgPushesFromSQLAsApplicationRole(t *testing.T) {
	t.Parallel()
	b := pgBackend()
	b.Open = func(t *testing.T) taskpg.DB { return testdb.Pool(t, applicationRoleURL(t), 16) }
	b.New = func(owner string) (taskapi.Repository[taskpg.DB], error) {
		repo, err := taskpg.New(owner)
		return sqlPusher{repo}, err
	}
	conformance.RunPushes(t, b)
}

// TestSQLPushRefusesBadInput calls task_push and task_push_many with what
// they must refuse, each in a savepoint of a transaction that goes on:
// the SQLSTATE and the message name the problem, and nothing changed.
func TestSQLPushRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := testdb.PostgresURL(t)
	pool := testdb.Pool(t, dbURL, 4)
	repo, err := taskpg.New("producer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, pool, "t"); err != nil {
		t.Fatal(err)
	}
	reader := testdb.Pool(t, grantedRoleURL(t, dbURL, readerGrants, "CREATE ROLE {role} LOGIN"), 2)
	for _, c := range []struct {
		name, sql, code, says string
		args                  []any
		db                    interface {
			Begin(context.Context) (pgx.Tx, error)
		}
	}{
		{"unknown topic", `SELECT public.task_push($1, 'a')`, "42704", `unknown topic 'nope'`, []any{"nope"}, pool},
		{"NULL identifier", `SELECT public.task_push('t', $1)`, "22023", "identifier NULL (task 1 of the push) is NULL", []any{nil}, pool},
		{"empty identifier", `SELECT public.task_push('t', $1)`, "22023", "is NULL, empty or over 500 bytes", []any{""}, pool},
		{"identifier over 500 bytes", `SELECT public.task_push('t', $1)`, "22023", "over 500 bytes", []any{strings.Repeat("x", 501)}, pool},
		{"reference over 500 bytes", `SELECT public.task_push('t', 'a', 'in', $1)`, "22023", "reference of task 1", []any{strings.Repeat("r", 501)}, pool},
		{"a NUL in the input", `SELECT public.task_push('t', 'a', $1)`, "22021", "0x00", []any{"in\x00put"}, pool},
		{"unknown mode", `SELECT public.task_push('t', 'a', 'in', NULL, $1)`, "22023", "'UPSERT' is not an insertion mode", []any{"UPSERT"}, pool},
		{"NULL mode", `SELECT public.task_push('t', 'a', 'in', NULL, $1)`, "22023", "NULL is not an insertion mode", []any{nil}, pool},
		{"empty topic", `SELECT public.task_push($1, 'a')`, "22023", "topic '' is empty", []any{""}, pool},
		{"not-before in the year 999", `SELECT public.task_push('t', 'a', 'in', NULL, 'APPEND', $1)`, "22023", "outside the years 1000 to 9999",
			[]any{time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC)}, pool},
		{"arrays of different lengths", `SELECT public.task_push_many('t', $1, $2)`, "22023", "2 identifiers, 1 inputs",
			[]any{[]string{"a", "b"}, []string{"in"}}, pool},
		{"a second identifier NULL", `SELECT public.task_push_many('t', $1)`, "22023", "(task 2 of the push)",
			[]any{[]*string{ptr("a"), nil}}, pool},
		{"a role without the grant", `SELECT public.task_push('t', 'a')`, "42501", "permission denied", nil, reader},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := c.db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			savepoint, err := tx.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = savepoint.Exec(ctx, c.sql, c.args...)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != c.code || !strings.Contains(pgErr.Message, c.says) {
				t.Fatalf("error = %v, want SQLSTATE %s saying %q", err, c.code, c.says)
			}
			if err := savepoint.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&n); err != nil {
				t.Fatalf("the transaction after the savepoint's rollback: %v", err)
			}
		})
	}
	counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts["t"]) != 0 {
		t.Errorf("counts after refused pushes = %v, want none", counts["t"])
	}
}

func ptr[T any](v T) *T { return &v }

// TestSQLPushWakesAGoConsumer pushes from SQL in a producer's own
// transactions while a taskproc Client whose pause is an hour runs: a
// rolled back push leaves no task, a committed one (ready, then deferred)
// is processed, which only the wake-up of task_push's notification can
// bring about within the test's patience.
func TestSQLPushWakesAGoConsumer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Pool(t, testdb.PostgresURL(t), 8)
	repo, err := taskpg.New("consumer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, pool, "mail"); err != nil {
		t.Fatal(err)
	}
	idle := make(chan struct{}, 100)
	handled := consumer(t, pool, repo, "mail", taskproc.WithObserver(taskproc.ObserverFunc(func(e taskproc.Event) {
		if e.Kind == taskproc.EventEmpty {
			idle <- struct{}{}
		}
	})))
	within(t, idle, "empty poll") // the loop waits its hour now
	push := func(commit bool, sql string, args ...any) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE IF NOT EXISTS orders (id int) ON COMMIT DELETE ROWS`); err != nil {
			_ = tx.Rollback(ctx)
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (1)`); err != nil { // the producer's own change
			_ = tx.Rollback(ctx)
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			_ = tx.Rollback(ctx)
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	push(false, `SELECT public.task_push('mail', 'rolled-back', 'x')`)
	push(true, `SELECT public.task_push('mail', 'user-42', 'welcome')`)
	if got := within(t, handled, "task handled"); got != "user-42 welcome" {
		t.Fatalf("handled %q, want user-42's (the rolled back push must leave no task)", got)
	}
	push(true, `SELECT public.task_push('mail', 'user-7', 'reminder', p_not_before => now() + interval '1 second')`)
	if got := within(t, handled, "deferred task handled"); got != "user-7 reminder" {
		t.Fatalf("handled %q, want user-7's", got)
	}
}

// TestSQLPushKeysMatchGo checks that task_push takes the locks a Go push
// takes and notifies its channels: task_push_key against internal/lockkey,
// task_push_channel against internal/edge, on names of several scripts and
// a schema long enough to be cut.
func TestSQLPushKeysMatchGo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.Postgres(t)
	longSchema := strings.Repeat("é", 20) + strings.Repeat("s", 30)
	for _, parts := range [][]string{{"public", "t"}, {"public", "t", "a"}, {"tenants", "commandes", "client-ü-42"},
		{longSchema, "注文", ""}} {
		var got int32
		if err := pool.QueryRow(ctx, `SELECT public.task_push_key($1)`, parts).Scan(&got); err != nil {
			t.Fatal(err)
		}
		want := lockkey.Topic(parts[0], parts[1])
		if len(parts) == 3 {
			want = lockkey.Identifiers(parts[0], parts[1], parts[2:])[0]
		}
		if got != want {
			t.Errorf("task_push_key(%q) = %d, want lockkey's %d", parts, got, want)
		}
	}
	for _, schema := range []string{"public", "tenants", longSchema, strings.Repeat("x", 70)} {
		for _, base := range []string{edge.TasksBase, edge.DueBase} {
			var got string
			if err := pool.QueryRow(ctx, `SELECT public.task_push_channel($1, $2)`, base, schema).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := edge.Channel(base, schema); got != want {
				t.Errorf("task_push_channel(%q, %q) = %q, want %q", base, schema, got, want)
			}
		}
	}
}

// consumer starts a taskproc Client of repo on pool that handles the tasks
// of topic, sending "identifier input" of each to the channel it returns.
// Its pause is an hour and it hears pushes through a taskpg.Notifier: only
// a wake-up makes it poll within a test. It stops when t ends.
func consumer(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic string, opts ...taskproc.ClientOption) <-chan string {
	t.Helper()
	handled := make(chan string, 10)
	opts = append([]taskproc.ClientOption{taskproc.WithNotifier(taskpg.NewNotifier(pool)), taskproc.WithPause(time.Hour)}, opts...)
	client, err := taskproc.New(repo, taskpg.Transact(pool), opts...)
	if err != nil {
		t.Fatal(err)
	}
	err = client.Handle(topic, taskproc.Sequential(func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		handled <- task.Identifier + " " + task.Input
		return taskapi.Decision{Result: taskapi.Success}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := client.Stop(stop); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return handled
}
