package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// deadlinePool and deadlineRequests: more pages at once than the pool has
// connections, so that most of them wait for one.
const (
	deadlinePool     = 3
	deadlineRequests = 12
)

// deadlinePages are pages that read the task table, which the test locks.
// (A confirmation counts within a budget of its own, and shows a bound
// beyond it: TestServeCountStopsInTheDatabase.)
var deadlinePages = []string{
	"/topic?topic=orders", "/topic?topic=orders&state=FAILED", "/topic?topic=orders&state=SUCCEEDED",
	"/task?topic=orders&seq=1",
}

// TestServePagesEndAtTheirReadTimeout holds a lock on every task of a
// PostgreSQL database while deadlineRequests pages that read them are
// asked for at once of a dashboard with a pool of deadlinePool
// connections: every page answers while the lock is still held, 503 with
// a page that says its reading was stopped at the read timeout (the pages
// that waited for a connection too); the dashboard never had more than
// deadlinePool connections open (pg_stat_activity, by its
// application_name); and no statement of the dashboard is left waiting for
// the lock. Once the lock is gone the pages answer again.
func TestServePagesEndAtTheirReadTimeout(t *testing.T) {
	database := postgresURL(t)
	d := startDashboardPool(t, database, web.Config{Refresh: time.Hour, ReadTimeout: time.Second}, deadlinePool)
	seedDashboard(t, d.store, "orders")
	br := newBrowser(t, d.url)
	waitFor(t, "the dashboard counts the last day", func() bool { // its backfill reads the tasks too
		first := time.Now().Add(-10 * time.Second).Truncate(time.Hour).Add(-24 * time.Hour)
		return strings.Contains(br.page("/results?since="+first.Format(time.RFC3339)), fromMemory)
	})
	unlock := lockTasks(t, database)
	replies := make(chan reply, deadlineRequests)
	var wg sync.WaitGroup
	for i := range deadlineRequests {
		wg.Go(func() { replies <- fetch(t, d.url+deadlinePages[i%len(deadlinePages)]) })
	}
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	most := 0
	patience := time.After(time.Minute) // the lock is held all along: pages that waited on it would never answer
	for waiting := true; waiting; {
		most = max(most, dashboardConnections(t, database))
		select {
		case <-answered:
			waiting = false
		case <-time.After(10 * time.Millisecond):
		case <-patience:
			t.Fatal("the pages did not answer while the tasks were locked")
		}
	}
	close(replies)
	for r := range replies {
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "longer than the dashboard&#39;s read timeout (1s, --read-timeout)") ||
			!strings.Contains(r.body, "Nothing was changed") {
			t.Errorf("a page of locked tasks answered %d, not 503 with the read timeout:\n%s", r.status, r.body)
		}
	}
	t.Logf("at most %d connections of the dashboard", most) // for the record, in -v
	if most > deadlinePool {
		t.Errorf("the dashboard had %d connections open, more than its pool of %d", most, deadlinePool)
	}
	// A statement given up on at the deadline itself is cancelled by a
	// request on the side, which may land a moment after the page: none
	// may stay waiting for the lock.
	waitFor(t, "the statements of the dashboard to stop while the lock is held", func() bool {
		return len(dashboardStatements(t, database)) == 0
	})
	unlock()
	for _, path := range deadlinePages {
		if r := br.get(path); r.status != http.StatusOK {
			t.Errorf("%s answered %d once the lock was gone:\n%s", path, r.status, r.body)
		}
	}
}

// fetch gets url, from any goroutine: a failure fails t and is a reply
// of status 0.
func fetch(t *testing.T, url string) reply {
	client := http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return reply{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// dashboardConnections counts the connections of the dashboard (its
// application_name) to database.
func dashboardConnections(t *testing.T, database string) (n int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, serveApplicationName).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dashboardStatements returns the statements of the dashboard that run in
// database.
func dashboardStatements(t *testing.T, database string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(t.Context(), `SELECT query FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND state = 'active'`, serveApplicationName)
	running, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return running
}

// TestServeRefusesBadReadLimits: a read timeout or a pool that cannot work
// is refused, naming the flag.
func TestServeRefusesBadReadLimits(t *testing.T) {
	db := sqliteURL(t)
	wantExit(t, db, exitUsage, "--read-timeout must be above zero", "serve", "--read-timeout", "0s")
	wantExit(t, db, exitUsage, "--read-timeout 1ms: give at least 10ms", "serve", "--read-timeout", "1ms")
	wantExit(t, db, exitUsage, "--read-timeout", "serve", "--read-timeout", "soon")
	wantExit(t, db, exitUsage, "--pool 1: give at least 2", "serve", "--pool", "1")
	wantExit(t, db, exitUsage, "--pool", "serve", "--pool", "many")
}
