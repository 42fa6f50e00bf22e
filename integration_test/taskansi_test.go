package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// ansiBackend runs taskansi of dialect on databases that open returns.
func ansiBackend(dialect taskansi.Dialect, open func(t *testing.T) *sql.DB, opts ...taskansi.Option) conformance.Backend[taskansi.DB] {
	return conformance.Backend[taskansi.DB]{
		Open: func(t *testing.T) taskansi.DB { return open(t) },
		New: func(owner string) (taskapi.Repository[taskansi.DB], error) {
			return taskansi.New(dialect, owner, opts...)
		},
		Begin: func(ctx context.Context, db taskansi.DB) (taskansi.DB, func(bool) error, error) {
			tx, err := db.(*sql.DB).BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, busyConflict(err)
			}
			end := func(commit bool) error {
				if commit {
					return busyConflict(tx.Commit())
				}
				return tx.Rollback()
			}
			return tx, end, nil
		},
	}
}

// busyConflict marks SQLite's BUSY, which a begin or a commit meets when
// another connection held the write lock for longer than busy_timeout (as
// under the race detector, with many writers), as taskapi.ErrConflict: the
// caller runs its transaction again, as taskansi.Transact's callers do.
func busyConflict(err error) error {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == 5 { // SQLITE_BUSY and its extended codes
		return fmt.Errorf("%w: %w", taskapi.ErrConflict, err)
	}
	return err
}

// openPostgres opens a fresh PostgreSQL database through pgx's database/sql driver.
func openPostgres(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The tests below prove, per dialect, what the conformance suite cannot:
// that taskpg and taskansi share one PostgreSQL database, that separate
// handles on one SQLite file (separate processes) never share a task, and
// that MySQL keeps names apart byte by byte.

// poller is one consumer of a topic, whichever package it uses.
type poller struct {
	name     string
	poll     func(ctx context.Context, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error)
	complete func(ctx context.Context, completions ...taskapi.Completion) error
}

func pgPoller(t *testing.T, pool *pgxpool.Pool, topic, owner string) poller {
	t.Helper()
	repo, err := taskpg.New(owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return poller{
		name: owner,
		poll: func(ctx context.Context, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
			return repo.Poll(ctx, pool, topic, size, opts...)
		},
		complete: func(ctx context.Context, completions ...taskapi.Completion) error {
			return repo.Complete(ctx, pool, topic, completions...)
		},
	}
}

func ansiPoller(t *testing.T, dialect taskansi.Dialect, db taskansi.DB, topic, owner string) poller {
	t.Helper()
	repo, err := taskansi.New(dialect, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	return poller{
		name: owner,
		poll: func(ctx context.Context, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
			return repo.Poll(ctx, db, topic, size, opts...)
		},
		complete: func(ctx context.Context, completions ...taskapi.Completion) error {
			return repo.Complete(ctx, db, topic, completions...)
		},
	}
}

// pollConcurrently lets pollers poll and complete total tasks at once with
// SingularByIdentifier, alternating FIFO and LIFO, and fails t when a task is
// received twice or an identifier is held by two pollers at once.
func pollConcurrently(t *testing.T, total int, pollers ...poller) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var (
		mu       sync.Mutex
		holders  = map[string]string{}
		received = map[taskapi.Task]string{}
		done     atomic.Int64
		wg       sync.WaitGroup
	)
	take := func(p poller, got []taskapi.Task) {
		mu.Lock()
		defer mu.Unlock()
		for _, task := range got {
			if holder, held := holders[task.Identifier]; held {
				t.Errorf("%s polled %v while %s holds identifier %s", p.name, task, holder, task.Identifier)
			}
			if prev, dup := received[task]; dup {
				t.Errorf("task %v received by %s and by %s", task, prev, p.name)
			}
			holders[task.Identifier], received[task] = p.name, p.name
		}
	}
	release := func(got []taskapi.Task) {
		mu.Lock()
		defer mu.Unlock()
		for _, task := range got {
			delete(holders, task.Identifier)
		}
	}
	for i, p := range pollers {
		order := []taskapi.Order{taskapi.FIFO, taskapi.LIFO}[i%2]
		wg.Go(func() {
			for done.Load() < int64(total) && ctx.Err() == nil && !t.Failed() {
				got, err := p.poll(ctx, 3, taskapi.SingularByIdentifier, order)
				if err != nil {
					t.Errorf("Poll by %s: %v", p.name, err)
					return
				}
				take(p, got)
				time.Sleep(200 * time.Microsecond)
				release(got)
				completions := make([]taskapi.Completion, len(got))
				for i, task := range got {
					completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
				}
				if err := p.complete(ctx, completions...); err != nil {
					t.Errorf("Complete by %s: %v", p.name, err)
					return
				}
				done.Add(int64(len(got)))
			}
		})
	}
	wg.Wait()
	if n := done.Load(); n != int64(total) && !t.Failed() {
		t.Errorf("%d of %d tasks done: %v", n, total, ctx.Err())
	}
}

// creations returns n creations spread over identifiers.
func creations(n, identifiers int) []taskapi.Creation {
	cs := make([]taskapi.Creation, n)
	for i := range cs {
		cs[i] = taskapi.Creation{Identifier: fmt.Sprintf("id-%d", i%identifiers), Input: fmt.Sprint(i)}
	}
	return cs
}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

// onePostgres opens a fresh PostgreSQL database both ways, a pgx pool and
// a database/sql handle, with a taskpg repository "pg" and a taskansi one
// "ansi", neither registered.
func onePostgres(t *testing.T) (ctx context.Context, pool *pgxpool.Pool, db *sql.DB, pg *taskpg.Repository, ansi *taskansi.Repository) {
	t.Helper()
	ctx, url := t.Context(), testdb.PostgresURL(t)
	pool = must[*pgxpool.Pool](t, "pgxpool")(pgxpool.New(ctx, url))
	t.Cleanup(pool.Close)
	db = must[*sql.DB](t, "sql.Open")(sql.Open("pgx", url))
	t.Cleanup(func() { db.Close() })
	pg = must[*taskpg.Repository](t, "taskpg.New")(taskpg.New("pg"))
	ansi = must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.Postgres, "ansi"))
	return ctx, pool, db, pg, ansi
}

func TestTaskpgAndTaskansiShareOnePostgresDatabase(t *testing.T) {
	t.Parallel()
	ctx, pool, db, pg, ansi := onePostgres(t)
	must[bool](t, "Register pg")(pg.Register(ctx, pool))
	must[bool](t, "Register ansi")(ansi.Register(ctx, db))

	// Topics and owners of one are the other's.
	must[bool](t, "Initialize by taskpg")(pg.Initialize(ctx, pool, "pg-topic"))
	must[bool](t, "Initialize by taskansi")(ansi.Initialize(ctx, db, "ansi-topic"))
	want := []string{"ansi-topic", "pg-topic"}
	if got := must[[]string](t, "Topics")(ansi.Topics(ctx, db)); !slices.Equal(got, want) {
		t.Errorf("taskansi Topics = %q, want %q", got, want)
	}
	if got := must[[]string](t, "Topics")(pg.Topics(ctx, pool)); !slices.Equal(got, want) {
		t.Errorf("taskpg Topics = %q, want %q", got, want)
	}
	if got := must[[]string](t, "Owners")(pg.Owners(ctx, pool, time.Hour)); !slices.Equal(got, []string{"ansi"}) {
		t.Errorf("taskpg Owners = %q, want [ansi]", got)
	}

	// Pushed by taskpg, polled and completed by taskansi, counted by taskpg.
	pushed := must[[]taskapi.Task](t, "Push by taskpg")(pg.Push(ctx, pool, "pg-topic", taskapi.Append,
		taskapi.Creation{Identifier: "a", Input: "in-a", Reference: "ref"}, taskapi.Creation{Identifier: "b"}))
	polled := must[[]taskapi.Task](t, "Poll by taskansi")(ansi.Poll(ctx, db, "pg-topic", 10))
	if !slices.Equal(polled, pushed) {
		t.Fatalf("taskansi polled %v, want %v", polled, pushed)
	}
	err := ansi.Complete(ctx, db, "pg-topic",
		taskapi.Completion{Task: polled[0], Decision: taskapi.Decision{Result: taskapi.Success, Output: "ok"}},
		taskapi.Completion{Task: polled[1], Decision: taskapi.Decision{Result: taskapi.Failure}})
	must[struct{}](t, "Complete by taskansi")(struct{}{}, err)
	counts := must[map[string]map[taskapi.State]taskapi.Summary](t, "Count by taskpg")(
		pg.Count(ctx, pool, taskapi.Total, taskapi.Counting{Topic: "pg-topic"}, taskapi.Unbounded))
	wantCounts := map[taskapi.State]taskapi.Summary{
		taskapi.Succeeded: {Count: 1, Bound: pushed[0].Sequence}, taskapi.Failed: {Count: 1, Bound: pushed[1].Sequence},
	}
	if !maps.Equal(counts["pg-topic"], wantCounts) {
		t.Errorf("taskpg Count = %v, want %v", counts, wantCounts)
	}
	info, ok, err := pg.Lookup(ctx, pool, "pg-topic", pushed[0].Sequence)
	if err != nil || !ok || info.Owner != "ansi" || info.Output != "ok" || info.Reference != "ref" || info.Completed.IsZero() {
		t.Errorf("taskpg Lookup = %+v, %v, %v; want completed by ansi with output ok", info, ok, err)
	}

	// Pushed by taskansi with Replace over taskpg's task, polled by taskpg.
	more := must[[]taskapi.Task](t, "Push by taskansi")(ansi.Push(ctx, db, "pg-topic", taskapi.Replace, taskapi.Creation{Identifier: "a"}))
	if more[0].Sequence <= pushed[1].Sequence {
		t.Errorf("taskansi's sequence %d does not follow taskpg's %d: not one sequence", more[0].Sequence, pushed[1].Sequence)
	}
	if got := must[[]taskapi.Task](t, "Poll by taskpg")(pg.Poll(ctx, pool, "pg-topic", 10)); !slices.Equal(got, more) {
		t.Fatalf("taskpg polled %v, want %v", got, more)
	}
	err = pg.Complete(ctx, pool, "pg-topic", taskapi.Completion{Task: more[0], Decision: taskapi.Decision{Result: taskapi.Success}})
	must[struct{}](t, "Complete by taskpg")(struct{}{}, err)
	results := must[map[string]map[taskapi.Result]int64](t, "Results by taskansi")(ansi.Results(ctx, db, time.Time{}, time.Time{}))
	if want := map[taskapi.Result]int64{taskapi.Success: 1, taskapi.Failure: 1}; !maps.Equal(results["pg-topic"], want) {
		t.Errorf("taskansi Results = %v, want %v for pg-topic", results, want)
	}
	infos := must[[]taskapi.Info](t, "Page by taskansi")(ansi.Page(ctx, db, "pg-topic", taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward))
	if len(infos) != 3 || infos[0].State != taskapi.Redundant || infos[0].Descent != taskapi.Succeeded {
		t.Errorf("taskansi Page = %+v, want taskpg's first task REDUNDANT with descent SUCCEEDED", infos)
	}

	// Purged by taskansi, gone for taskpg; destroyed by taskpg, gone for taskansi.
	if n := must[int64](t, "Purge by taskansi")(ansi.Purge(ctx, db, "pg-topic", taskapi.Unbounded)); n != 3 {
		t.Errorf("taskansi Purge = %d, want 3", n)
	}
	if got := must[[]taskapi.Info](t, "Page by taskpg")(pg.Page(ctx, pool, "pg-topic", taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)); len(got) != 0 {
		t.Errorf("taskpg Page after taskansi's Purge = %+v, want nothing", got)
	}
	if !must[bool](t, "Destroy by taskpg")(pg.Destroy(ctx, pool, "ansi-topic")) {
		t.Errorf("taskpg Destroy of taskansi's topic = false")
	}
	if _, err := ansi.Push(ctx, db, "ansi-topic", taskapi.Append, taskapi.Creation{Identifier: "x"}); !errors.Is(err, taskapi.ErrUnknownTopic) {
		t.Errorf("taskansi Push to the destroyed topic = %v, want ErrUnknownTopic", err)
	}
}

// TestTaskpgAndTaskansiPollTogether has both packages poll one topic at once
// with SingularByIdentifier in FIFO and LIFO order: they serialize each
// other's conditional polls with one advisory lock.
func TestTaskpgAndTaskansiPollTogether(t *testing.T) {
	t.Parallel()
	ctx, url := t.Context(), testdb.PostgresURL(t)
	pool := must[*pgxpool.Pool](t, "pgxpool")(pgxpool.New(ctx, url))
	t.Cleanup(pool.Close)
	db := must[*sql.DB](t, "sql.Open")(sql.Open("pgx", url))
	t.Cleanup(func() { db.Close() })
	ansi := must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.Postgres, "producer"))
	must[bool](t, "Initialize")(ansi.Initialize(ctx, db, "t"))
	const total = 120
	must[[]taskapi.Task](t, "Push")(ansi.Push(ctx, db, "t", taskapi.Append, creations(total, 6)...))
	pollConcurrently(t, total,
		pgPoller(t, pool, "t", "pg-1"), ansiPoller(t, taskansi.Postgres, db, "t", "ansi-1"),
		ansiPoller(t, taskansi.Postgres, db, "t", "ansi-2"), pgPoller(t, pool, "t", "pg-2"))
}

// TestTaskansiSQLiteSeparateHandlesNeverShareATask opens one SQLite file
// four times, as four processes would, one of them without _txlock, and
// polls it from all at once.
func TestTaskansiSQLiteSeparateHandlesNeverShareATask(t *testing.T) {
	t.Parallel()
	ctx, path := t.Context(), testdb.SQLiteFile(t)
	producer := must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.SQLite, "producer"))
	db := testdb.OpenSQLite(t, path, testdb.SQLiteOptions)
	must[bool](t, "Initialize")(producer.Initialize(ctx, db, "t"))
	const total = 120
	must[[]taskapi.Task](t, "Push")(producer.Push(ctx, db, "t", taskapi.Append, creations(total, 6)...))
	pollers := make([]poller, 4)
	for i := range pollers {
		options := testdb.SQLiteOptions
		if i == 3 {
			options = "_pragma=busy_timeout(10000)" // deferred transactions, default journal mode
		}
		pollers[i] = ansiPoller(t, taskansi.SQLite, testdb.OpenSQLite(t, path, options), "t", fmt.Sprintf("process-%d", i))
	}
	pollConcurrently(t, total, pollers...)
}

// TestTaskansiMySQLNamesAreBytes checks that MySQL keeps apart names that
// its text collations would confuse (case, trailing spaces, accents), and
// that input beyond TEXT's 64 KiB round-trips.
func TestTaskansiMySQLNamesAreBytes(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), testdb.MySQL(t)
	repo := must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.MySQL, "owner"))
	names := []string{"a", "A", "a ", "á"}
	for _, name := range names {
		if !must[bool](t, "Initialize")(repo.Initialize(ctx, db, name)) {
			t.Errorf("Initialize(%q) = false, want a topic of its own", name)
		}
	}
	if got, want := must[[]string](t, "Topics")(repo.Topics(ctx, db)), slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("Topics = %q, want %q", got, want)
	}
	long := strings.Repeat("ü", 50000) // 100000 bytes
	first := must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "a", taskapi.Append,
		taskapi.Creation{Identifier: "x", Input: long}, taskapi.Creation{Identifier: "X"}, taskapi.Creation{Identifier: "x "}))
	must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "a", taskapi.Replace, taskapi.Creation{Identifier: "x"}))
	for i, want := range []taskapi.State{taskapi.Redundant, taskapi.Ready, taskapi.Ready} {
		info, ok, err := repo.Lookup(ctx, db, "a", first[i].Sequence)
		if err != nil || !ok || info.State != want {
			t.Errorf("task %q after Replace(x) = %v, %v, %v; want %v", first[i].Identifier, info.State, ok, err, want)
		}
		if i == 0 && info.Input != long {
			t.Errorf("a %d-byte input came back as %d bytes", len(long), len(info.Input))
		}
	}
}

// TestTaskansiSkipsLockedRows checks, on the databases with row locks, that
// polls skip a row that another transaction locked, and that WithExclusive
// waits for it instead.
func TestTaskansiSkipsLockedRows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dialect taskansi.Dialect
		open    func(t *testing.T) *sql.DB
		lock    string
	}{
		{taskansi.Postgres, openPostgres, `SELECT sequence FROM task WHERE topic = $1 AND sequence = $2 FOR UPDATE`},
		{taskansi.MySQL, func(t *testing.T) *sql.DB { return testdb.MySQL(t) }, `SELECT sequence FROM task WHERE topic = ? AND sequence = ? FOR UPDATE`},
	} {
		t.Run(c.dialect.String(), func(t *testing.T) {
			t.Parallel()
			ctx, db := t.Context(), c.open(t)
			repo := must[*taskansi.Repository](t, "New")(taskansi.New(c.dialect, "owner"))
			exclusive := must[*taskansi.Repository](t, "New")(taskansi.New(c.dialect, "owner", taskansi.WithExclusive()))
			must[bool](t, "Register")(repo.Register(ctx, db))
			must[bool](t, "Initialize")(repo.Initialize(ctx, db, "t"))
			tasks := must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "t", taskapi.Append,
				taskapi.Creation{Identifier: "x"}, taskapi.Creation{Identifier: "y"}))
			tx := must[*sql.Tx](t, "Begin")(db.BeginTx(ctx, nil))
			t.Cleanup(func() { _ = tx.Rollback() })
			if err := drainRows(tx.QueryContext(ctx, c.lock, "t", tasks[0].Sequence)); err != nil {
				t.Fatalf("lock: %v", err)
			}

			wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if got, err := exclusive.Poll(wait, db, "t", 2); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("exclusive Poll of a locked row = %v, %v; want it to wait", got, err)
			}
			got, err := repo.Poll(ctx, db, "t", 2)
			if err != nil || len(got) != 1 || got[0] != tasks[1] {
				t.Errorf("Poll = %v, %v; want %v, the unlocked task", got, err, tasks[1:])
			}
		})
	}
}

// TestTaskansiMySQLPushBeyondThePacketLimit pushes more text than one
// statement may carry (max_allowed_packet, 16 MiB on MariaDB by default).
func TestTaskansiMySQLPushBeyondThePacketLimit(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), testdb.MySQL(t)
	repo := must[*taskansi.Repository](t, "taskansi.New")(taskansi.New(taskansi.MySQL, "owner"))
	must[bool](t, "Initialize")(repo.Initialize(ctx, db, "t"))
	big := strings.Repeat("x", 1<<20)
	cs := make([]taskapi.Creation, 24)
	for i := range cs {
		cs[i] = taskapi.Creation{Identifier: fmt.Sprint(i), Input: big}
	}
	tasks := must[[]taskapi.Task](t, "Push of 24 MiB")(repo.Push(ctx, db, "t", taskapi.Append, cs...))
	for i := 1; i < len(tasks); i++ {
		if tasks[i].Sequence <= tasks[i-1].Sequence {
			t.Fatalf("sequence %d follows %d in one push", tasks[i].Sequence, tasks[i-1].Sequence)
		}
	}
}

// drainRows reads the rows of a query to their end and closes them.
func drainRows(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}
