package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// wakeListener is a taskpg Notifier whose wake-ups a test reads in order.
type wakeListener struct {
	topics chan string
}

// listenTo runs a taskpg Notifier on the database at url until the test
// ends, and returns once it listens.
func listenTo(t *testing.T, url string) *wakeListener {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l := &wakeListener{topics: make(chan string, 10_000)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- taskpg.NewNotifier(pool).Listen(ctx, func(topics []string) {
			if topics == nil {
				topics = []string{"*"}
			}
			for _, topic := range topics {
				l.topics <- topic
			}
		}, nil, nil, func(err error) { t.Errorf("lost(%v)", err) })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Listen returned %v", err)
		}
	})
	l.expect(t, "*")
	return l
}

// expect waits for wake-ups of topics, in this order, and fails on any
// other before them.
func (l *wakeListener) expect(t *testing.T, topics ...string) {
	t.Helper()
	for _, want := range topics {
		select {
		case got := <-l.topics:
			if got != want {
				t.Fatalf("woken for %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up for %q within 30 s", want)
		}
	}
}

// taskansi's pushes on PostgreSQL notify taskpg's channel when they commit,
// in every insertion mode and on every handle; a rolled-back push notifies
// nothing; WithWakeUps, WithoutWakeUps and WithQuietTopics work as in
// taskpg.
func TestTaskansiPostgresPushesWake(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	newRepo := func(owner string, opts ...taskansi.Option) *taskansi.Repository {
		repo, err := taskansi.New(taskansi.Postgres, owner, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	repo := newRepo("a")
	throttled := newRepo("b", taskansi.WithWakeUps(time.Hour))
	off := newRepo("c", taskansi.WithoutWakeUps())
	someQuiet := newRepo("d", taskansi.WithQuietTopics("quiet"))
	pushTo := func(repo *taskansi.Repository, db taskansi.DB, topic string, insertion taskapi.Insertion, n int) {
		t.Helper()
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Push(ctx, db, topic, insertion, creations(n, n)...); err != nil {
			t.Fatal(err)
		}
	}
	inTx := func(commit bool, fn func(tx *sql.Tx)) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		fn(tx)
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	l := listenTo(t, url)

	pushTo(repo, db, "one", taskapi.Append, 1)
	l.expect(t, "one")
	for _, insertion := range []taskapi.Insertion{taskapi.Append, taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
		inTx(true, func(tx *sql.Tx) { pushTo(repo, tx, "in a transaction "+insertion.String(), insertion, 3) })
		l.expect(t, "in a transaction "+insertion.String())
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pushTo(repo, conn, "on a connection", taskapi.Append, 150)
	conn.Close()
	l.expect(t, "on a connection")

	inTx(false, func(tx *sql.Tx) { pushTo(repo, tx, "rolled back", taskapi.Append, 1) })
	for range 20 {
		pushTo(throttled, db, "throttled", taskapi.Append, 1)
	}
	pushTo(off, db, "off", taskapi.Append, 1)
	pushTo(someQuiet, db, "quiet", taskapi.Append, 1)
	pushTo(someQuiet, db, "loud", taskapi.Append, 1)
	l.expect(t, "throttled", "loud")
}

// On SQLite and MySQL the options of wake-ups are accepted and pushes
// notify nothing.
func TestTaskansiWakeUpsElsewhere(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) (taskansi.Dialect, *sql.DB){
		"sqlite": func(t *testing.T) (taskansi.Dialect, *sql.DB) { return taskansi.SQLite, testdb.SQLite(t) },
		"mysql":  func(t *testing.T) (taskansi.Dialect, *sql.DB) { return taskansi.MySQL, testdb.MySQL(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dialect, db := open(t)
			for i, opts := range [][]taskansi.Option{
				nil, {taskansi.WithWakeUps(0)}, {taskansi.WithoutWakeUps()}, {taskansi.WithQuietTopics("t")},
			} {
				repo, err := taskansi.New(dialect, fmt.Sprintf("o%d", i), opts...)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Push(t.Context(), db, "t", taskapi.Append, creations(3, 3)...); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
