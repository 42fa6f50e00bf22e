package taskproc_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// A database error during settlement never becomes a task's result. The
// tests below cut the connection at each statement of each way to settle a
// batch in turn — before the statement reaches the server, and after it
// did but before its answer came back (for a COMMIT: committed, and the
// runtime cannot know) — until a run in which the path sent fewer
// statements than the cut waited for. Every run must end with the
// handler's own settlement written, once: the decided state, the user's
// rows of a CompleteTx exactly once, no Failure for a database error.

// maxCutStatements bounds how many statements a settlement path may send.
const maxCutStatements = 40

// rigOps are what the rigs of the cut and freeze tests do on a backend:
// transactions, repositories, the user's table and statements.
type rigOps[Tx any] struct {
	transact func(db Tx) taskproc.Transact[Tx]
	newRepo  func(owner string) (fullRepo[Tx], error)
	effect   string // the user's table
	exec     func(ctx context.Context, db Tx, statement string, args ...any) error
	count    func(ctx context.Context, db Tx, query string, args ...any) (int, error)
	param    string // the placeholder of the dialect
}

// pgOps are taskpg's, with the user's table effect.
func pgOps(effect string) rigOps[taskpg.DB] {
	return rigOps[taskpg.DB]{
		transact: func(db taskpg.DB) taskproc.Transact[taskpg.DB] { return taskpg.Transact(db) },
		newRepo:  func(owner string) (fullRepo[taskpg.DB], error) { return taskpg.New(owner) },
		effect:   effect,
		exec: func(ctx context.Context, db taskpg.DB, statement string, args ...any) error {
			_, err := db.Exec(ctx, statement, args...)
			return err
		},
		count: func(ctx context.Context, db taskpg.DB, query string, args ...any) (n int, err error) {
			err = db.QueryRow(ctx, query, args...).Scan(&n)
			return n, err
		},
		param: "$1",
	}
}

// ansiOps are taskansi's of dialect, with transactions begun with opts,
// the user's table effect and the dialect's placeholder param.
func ansiOps(dialect taskansi.Dialect, opts *sql.TxOptions, effect, param string) rigOps[taskansi.DB] {
	return rigOps[taskansi.DB]{
		transact: func(db taskansi.DB) taskproc.Transact[taskansi.DB] { return taskansi.Transact(db.(*sql.DB), opts) },
		newRepo:  func(owner string) (fullRepo[taskansi.DB], error) { return taskansi.New(dialect, owner) },
		effect:   effect,
		exec: func(ctx context.Context, db taskansi.DB, statement string, args ...any) error {
			_, err := db.ExecContext(ctx, statement, args...)
			return err
		},
		count: func(ctx context.Context, db taskansi.DB, query string, args ...any) (n int, err error) {
			err = db.QueryRowContext(ctx, query, args...).Scan(&n)
			return n, err
		},
		param: param,
	}
}

// cutRig is a database reached directly, to set up and check, and through
// a proxy that cuts connections at a statement.
type cutRig[Tx any] struct {
	rigOps[Tx]
	direct Tx
	proxy  *netproxy.Proxy
	open   func(t *testing.T) (Tx, func()) // a fresh handle through the proxy, that never pings
}

// TestSettlementSurvivesACutAtEveryStatement cuts settlement on taskpg and
// on taskansi (MySQL); on taskansi's PostgreSQL dialect it is a heavy
// test (heavy_suites_test.go), as its suites are.
func TestSettlementSurvivesACutAtEveryStatement(t *testing.T) {
	t.Run("taskpg", func(t *testing.T) { t.Parallel(); cutPaths(t, pgCutRig(t)) })
	t.Run("taskansi-mysql", func(t *testing.T) { t.Parallel(); cutPaths(t, mysqlCutRig(t)) })
}

// pgCutRig is taskpg on PostgreSQL.
func pgCutRig(t *testing.T) *cutRig[taskpg.DB] {
	dbURL := testdb.PostgresURL(t)
	proxy, proxied, err := netproxy.ForURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return &cutRig[taskpg.DB]{
		direct: testdb.Pool(t, dbURL, 4),
		proxy:  proxy,
		open: func(t *testing.T) (taskpg.DB, func()) {
			cfg, err := pgxpool.ParseConfig(proxied)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["search_path"] = ""
			cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return pool, pool.Close
		},
		rigOps: pgOps("public.cut_effect"),
	}
}

// ansiPostgresCutRig is taskansi on PostgreSQL, through pgx's database/sql
// driver.
func ansiPostgresCutRig(t *testing.T) *cutRig[taskansi.DB] {
	dbURL := testdb.PostgresURL(t)
	proxy, proxied, err := netproxy.ForURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	open := func(url string) *sql.DB {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["search_path"] = ""
		return stdlib.OpenDB(*cfg, stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false }))
	}
	direct := open(dbURL)
	t.Cleanup(func() { direct.Close() })
	return ansiCutRig(taskansi.Postgres, nil, direct, proxy, "public.cut_effect", "$1", func(t *testing.T) (*sql.DB, func()) {
		db := open(proxied)
		return db, func() { db.Close() }
	})
}

// mysqlCutRig is taskansi on MySQL or MariaDB.
func mysqlCutRig(t *testing.T) *cutRig[taskansi.DB] {
	direct, proxy, proxied := proxiedMySQL(t, nil)
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return ansiCutRig(taskansi.MySQL, readCommitted, direct, proxy, "cut_effect", "?", func(t *testing.T) (*sql.DB, func()) {
		db, err := sql.Open("mysql", proxied)
		if err != nil {
			t.Fatal(err)
		}
		return db, func() { db.Close() }
	})
}

// proxiedMySQL opens a fresh, migrated MySQL or MariaDB database whose
// sessions get the system variables params, and a proxy to it, closed when
// t ends, and returns a handle on it, the proxy and the DSN through it.
func proxiedMySQL(t *testing.T, params map[string]string) (*sql.DB, *netproxy.Proxy, string) {
	cfg := testdb.MySQLConfig(t)
	cfg.Params = params
	direct, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	if err := migrations.Up(t.Context(), direct, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	proxy, proxied, err := netproxy.ForMySQLDSN(cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return direct, proxy, proxied
}

// ansiCutRig is taskansi of dialect on direct and on the handles open
// returns.
func ansiCutRig(dialect taskansi.Dialect, opts *sql.TxOptions, direct *sql.DB, proxy *netproxy.Proxy, effect, param string, open func(t *testing.T) (*sql.DB, func())) *cutRig[taskansi.DB] {
	return &cutRig[taskansi.DB]{
		rigOps: ansiOps(dialect, opts, effect, param),
		direct: direct,
		proxy:  proxy,
		open: func(t *testing.T) (taskansi.DB, func()) {
			db, closeDB := open(t)
			return db, closeDB
		},
	}
}

// A cutPath settles b one way, and checks what a task so settled is.
type cutPath[Tx any] struct {
	settle  func(ctx context.Context, rig *cutRig[Tx], b *taskproc.Batch) error
	check   func(info taskapi.Info) error
	effects int // the user's rows a task so settled has
}

// cutPaths cuts every statement of every settlement path on rig.
func cutPaths[Tx any](t *testing.T, rig *cutRig[Tx]) {
	ctx := t.Context()
	repo, err := rig.newRepo("cut")
	if err == nil {
		_, err = repo.Register(ctx, rig.direct)
	}
	if err == nil {
		err = rig.exec(ctx, rig.direct, "CREATE TABLE "+rig.effect+" (seq bigint NOT NULL)")
	}
	if err != nil {
		t.Fatal(err)
	}
	succeeded := func(info taskapi.Info) error {
		if info.State != taskapi.Succeeded || info.Owner != "cut" {
			return fmt.Errorf("%v of %q, want SUCCEEDED by the handler's owner", info.State, info.Owner)
		}
		return nil
	}
	paths := map[string]cutPath[Tx]{
		"Complete": {
			settle: func(_ context.Context, _ *cutRig[Tx], b *taskproc.Batch) error {
				return b.Complete(every(b, taskapi.Success))
			},
			check: succeeded,
		},
		"CompleteTx": {
			settle: func(_ context.Context, rig *cutRig[Tx], b *taskproc.Batch) error {
				return taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
					for _, task := range b.Tasks() {
						if err := rig.exec(ctx, tx, "INSERT INTO "+rig.effect+" (seq) VALUES ("+rig.param+")", task.Sequence); err != nil {
							return nil, err
						}
					}
					return every(b, taskapi.Success), nil
				})
			},
			check:   succeeded,
			effects: 1,
		},
		"Fail": {
			settle: func(_ context.Context, _ *cutRig[Tx], b *taskproc.Batch) error {
				return b.Fail(errors.New("the handler gave up"))
			},
			check: func(info taskapi.Info) error {
				if info.State != taskapi.Failed || info.Output != "the handler gave up" {
					return fmt.Errorf("%v with %q, want FAILED with the handler's error", info.State, info.Output)
				}
				return nil
			},
		},
		"Release": {
			settle: func(_ context.Context, _ *cutRig[Tx], b *taskproc.Batch) error { return b.Release() },
			check: func(info taskapi.Info) error {
				if info.State != taskapi.Ready || info.Owner != "" || info.Descent != taskapi.Ready {
					return fmt.Errorf("%v of %q (descent %v), want READY as never polled", info.State, info.Owner, info.Descent)
				}
				return nil
			},
		},
		"Retry": {
			settle: func(_ context.Context, _ *cutRig[Tx], b *taskproc.Batch) error {
				if err := b.Retry(b.Tasks()[0], errors.New("try later")); err != nil {
					return err
				}
				return b.Complete(nil)
			},
			check: func(info taskapi.Info) error {
				attempts, _ := taskproc.Attempts(info.Output)
				if info.State != taskapi.Ready || len(attempts) != 1 || info.NotBefore.IsZero() {
					return fmt.Errorf("%v with %d attempts, due %v; want READY, deferred, one attempt", info.State, len(attempts), info.NotBefore)
				}
				return nil
			},
		},
		"Snooze": {
			settle: func(_ context.Context, _ *cutRig[Tx], b *taskproc.Batch) error {
				if err := b.Snooze(b.Tasks()[0], time.Hour); err != nil {
					return err
				}
				return b.Complete(nil)
			},
			check: func(info taskapi.Info) error {
				if info.State != taskapi.Ready || info.Owner != "" || info.NotBefore.Before(info.Created.Add(50*time.Minute)) || info.Output != "" {
					return fmt.Errorf("%v of %q due %v (created %v) with %q; want READY, an hour later, no attempt", info.State, info.Owner, info.NotBefore, info.Created, info.Output)
				}
				return nil
			},
		},
	}
	for _, name := range []string{"Complete", "CompleteTx", "Fail", "Release", "Retry", "Snooze"} {
		for _, mode := range []netproxy.Mode{netproxy.Before, netproxy.After} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				// A topic of its own: a task that one path gives back
				// must not be polled by the next.
				name := name + "-" + mode.String()
				if _, err := repo.Initialize(ctx, rig.direct, name); err != nil {
					t.Fatal(err)
				}
				cutEvery(t, rig, repo, name, paths[name[:strings.IndexByte(name, '-')]], mode)
			})
		}
	}
}

// cutEvery settles a task by path with a cut at statement 1, 2, … of the
// settlement, until a run whose settlement sent fewer statements.
func cutEvery[Tx any](t *testing.T, rig *cutRig[Tx], repo fullRepo[Tx], topic string, path cutPath[Tx], mode netproxy.Mode) {
	var cut []string
	for n := 1; n <= maxCutStatements; n++ {
		at, fired := cutOnce(t, rig, repo, topic, path, n, mode)
		if t.Failed() {
			t.Fatalf("cut %v statement %d: %v", mode, n, at)
		}
		if !fired {
			if n == 1 {
				t.Fatal("the settlement sent no statement to cut")
			}
			t.Logf("cut %v each of %d statements: %s", mode, n-1, strings.Join(cut, " | "))
			return
		}
		text := strings.Join(strings.Fields(at.SQL), " ")
		cut = append(cut, text[:min(len(text), 40)])
	}
	t.Fatalf("the settlement sent more than %d statements", maxCutStatements)
}

// cutOnce runs a Manager on a fresh handle through the proxy, whose
// handler arms a cut at statement n of its settlement and settles by
// path; the proxy lets connections through again once the cut has fired.
// It checks the task and the user's rows, and reports where the cut fired.
func cutOnce[Tx any](t *testing.T, rig *cutRig[Tx], repo fullRepo[Tx], topic string, path cutPath[Tx], n int, mode netproxy.Mode) (netproxy.Statement, bool) {
	ctx := t.Context()
	pushed, err := repo.Push(ctx, rig.direct, topic, taskapi.Append, taskapi.Creation{Identifier: fmt.Sprintf("cut-%v-%d", mode, n)})
	if err != nil {
		t.Fatal(err)
	}
	task := pushed[0]
	db, closeDB := rig.open(t)
	defer closeDB()
	settled := make(chan error, 1)
	done := make(chan struct{})
	var m *taskproc.Manager[Tx]
	m, err = taskproc.NewManager[Tx](repo, rig.transact(db), topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		m.SetClaiming(false) // one batch: what the settlement gives back must not come back here
		rig.proxy.CutAtStatement(n, mode)
		go restoreOnceCut(rig.proxy, done)
		settled <- path.settle(ctx, rig, b)
		return nil
	}), taskproc.WithPause(20*time.Millisecond), taskproc.WithLogger(slog.New(slog.DiscardHandler)),
		// A retried task waits an hour, so that the next run's poll, a
		// moment later, does not take it too.
		taskproc.WithRetry(taskproc.RetryPolicy{MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Hour }}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = within(t, "the settlement", settled)
	close(done)
	stopWithin(t, m.Stop)
	rig.proxy.Restore()
	at, fired := rig.proxy.Fired()
	if err != nil {
		t.Errorf("the settlement returned %v, want it written", err)
	}
	info, found, lerr := repo.Lookup(ctx, rig.direct, topic, task.Sequence)
	switch {
	case lerr != nil || !found:
		t.Fatalf("Lookup(%d) = %v, %v", task.Sequence, found, lerr)
	case path.check(info) != nil:
		t.Errorf("task %d: %v (output %q)", task.Sequence, path.check(info), info.Output)
	}
	if rows, err := rig.count(ctx, rig.direct, "SELECT count(*) FROM "+rig.effect+" WHERE seq = "+rig.param, task.Sequence); err != nil {
		t.Fatal(err)
	} else if rows != path.effects {
		t.Errorf("task %d has %d rows of the user's, want %d", task.Sequence, rows, path.effects)
	}
	return at, fired
}

// restoreOnceCut lets connections through again once the armed cut has
// fired and the server has seen the end of every connection it dropped,
// until done.
func restoreOnceCut(proxy *netproxy.Proxy, done <-chan struct{}) {
	for {
		if _, fired := proxy.Fired(); fired {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			_ = proxy.WaitIdle(ctx)
			cancel()
			proxy.Restore()
			return
		}
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}
