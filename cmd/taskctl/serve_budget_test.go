package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// TestServeConfirmationsBeyondBudget serves on SQLite and PostgreSQL with
// a budget too short for any count: the confirmations show a bound from
// the sampler's last count per state, and say so; the result pages after
// the POSTs report exactly what changed.
func TestServeConfirmationsBeyondBudget(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond, CountBudget: time.Nanosecond})
			seedDashboard(t, d.store, "orders") // ten FAILED, ten READY
			br := newBrowser(t, d.url)
			actOnBound(t, br, "/action/reassign?topic=orders&state=FAILED&result=SUCCESS",
				"at most 10 tasks would be set to SUCCEEDED", "FAILED", "after the change", "set 10 tasks of")
			actOnBound(t, br, "/action/purge?topic=orders&state=SUCCEEDED&older=0s",
				"at most 10 tasks would be deleted for good", "SUCCEEDED", "after the purge", "deleted 10 tasks")
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 10})
		})
	}
}

// actOnBound waits until the confirmation at path shows the bound (the
// sampler has counted what it names), checks that it says it is one, from
// the last count of state, and when the exact number comes (after); then
// confirms it, and checks that the result page says done.
func actOnBound(t *testing.T, br *browser, path, bound, state, after, done string) {
	t.Helper()
	waitFor(t, "the sampler counts the "+state+" tasks", func() bool { return strings.Contains(br.page(path), bound) })
	wantBound(t, br.page(path), state, after)
	if page := act(t, br, path, bound); !strings.Contains(page, done) {
		t.Errorf("the result of %s does not say %q:\n%s", path, done, page)
	}
}

// wantBound fails t unless a confirmation says that its number is a bound
// from the last count of state, and when the exact one comes.
func wantBound(t *testing.T, page, state, after string) {
	t.Helper()
	for _, s := range []string{"so this is a bound", "last count of this topic&#39;s " + state + " tasks", "the exact number is reported " + after} {
		if !strings.Contains(page, s) {
			t.Errorf("the confirmation does not say %q:\n%s", s, page)
		}
	}
}

// TestServeCountStopsInTheDatabase holds a lock on every task while a
// confirmation counts on PostgreSQL: the count waits past its budget and
// the page shows the bound; the server has stopped the count by the time
// the page is out (no statement of the dashboard is left running), and
// the connection it ran on is kept (pgx alone would close it, and cancel
// the statement on the side). Once the lock is gone, the confirmation
// counts, and its POST revives every task counted.
func TestServeCountStopsInTheDatabase(t *testing.T) {
	database := postgresURL(t)
	s, err := (&app{database: database, stdout: io.Discard, stderr: io.Discard}).open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seedDashboard(t, s, "orders") // before the dashboard's first count
	d := startDashboard(t, database, web.Config{Refresh: time.Hour})
	br := newBrowser(t, d.url)
	waitFor(t, "the dashboard counts the last day", func() bool { // to its first hour: the backfill is done
		first := time.Now().Add(-10 * time.Second).Truncate(time.Hour).Add(-24 * time.Hour)
		return strings.Contains(br.page("/results?since="+first.Format(time.RFC3339)), fromMemory)
	})
	unlock := lockTasks(t, database)
	_, before := activity(t, database)
	revive := "/action/revive?topic=orders&state=FAILED"
	wantBound(t, br.page(revive), "FAILED", "after the revival")
	running, after := activity(t, database)
	if len(running) > 0 {
		t.Errorf("statements still run after the confirmation: %q", running)
	}
	for _, pid := range before {
		if !slices.Contains(after, pid) {
			t.Errorf("the connection of server process %d was closed: %v, then %v", pid, before, after)
		}
	}
	unlock()
	if done := act(t, br, revive, "10 tasks would be made READY"); !strings.Contains(done, "revived 10 tasks") {
		t.Errorf("the result of revive does not say how many:\n%s", done)
	}
}

// lockTasks takes an ACCESS EXCLUSIVE lock on the task table of database,
// and returns the function that lets it go.
func lockTasks(t *testing.T, database string) (unlock func()) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	lock, err := conn.Begin(ctx)
	if err == nil {
		_, err = lock.Exec(ctx, "LOCK TABLE task IN ACCESS EXCLUSIVE MODE")
	}
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := lock.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// activity returns the statements that run in database, and the server
// processes of its idle connections, but for those of the caller's and
// of lockTasks (in a transaction).
func activity(t *testing.T, database string) (running []string, idle []int32) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT pid, state, query FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state IN ('active', 'idle')`)
	var (
		pid          int32
		state, query string
	)
	_, err = pgx.ForEachRow(rows, []any{&pid, &state, &query}, func() error {
		if state == "active" {
			running = append(running, query)
		} else {
			idle = append(idle, pid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return running, idle
}
