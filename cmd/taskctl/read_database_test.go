package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// nowhere is a PostgreSQL URL that nothing answers: a command that
// reaches for it fails with exit code 3.
const nowhere = "postgres://postgres@127.0.0.1:1/tasks?sslmode=disable&connect_timeout=1"

// TestReadsFromAStandby runs every command that only reads with
// --read-database on the hot standby of a synchronous pair, and --database
// on an address nothing answers: each answers from the standby, which
// refuses any write, so none of them touched the primary or wrote where it
// read. The commands that write go to --database whatever --read-database
// says.
func TestReadsFromAStandby(t *testing.T) {
	t.Parallel()
	pair := testdb.OwnReplicated(t, true)
	primary, standby := pair.URL(), pair.StandbyURL()
	must(t, primary, "topic", "init", "orders")
	must(t, primary, "--read-database", standby, "push", "-t", "orders", "order-1", "order-2", "order-3")
	must(t, primary, "--read-database", standby, "topic", "pause", "orders")
	must(t, primary, "--read-database", standby, "topic", "capacity", "orders", "500")
	must(t, primary, "--read-database", standby, "topic", "limits", "orders", "--active", "7")
	wantExit(t, nowhere, exitUnreachable, "cannot reach", "--read-database", standby, "push", "-t", "orders", "order-4")

	read := func(args ...string) string {
		t.Helper()
		return must(t, nowhere, append([]string{"--read-database", standby}, args...)...)
	}
	// Synchronous replication waits for the standby's flush, not for its
	// replay: the last write shows there a moment later.
	waitFor(t, "the standby replays the limits", func() bool { return strings.Contains(read("topic", "limits", "orders"), "7") })
	reads := map[string][]string{
		"list -t orders":         {"order-1", "order-3"},
		"show -t orders 2":       {"order-2"},
		"count -t orders":        {"READY", "3"},
		"results --since 1h":     {"no task completed"},
		"resolve 1h":             {"1"},
		"audit":                  {"topic pause", "topic capacity", "topic limits"},
		"owners list":            {"no owners"},
		"topic list":             {"orders", "PAUSED", "500"},
		"topic capacity orders":  {"500"},
		"topic limits orders":    {"7"},
		"top --once --json":      {`"orders"`},
		"--json list -t orders":  {`"order-2"`},
		"--json count -t orders": {`"READY"`},
	}
	for line, wants := range reads {
		out := read(strings.Fields(line)...)
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("taskctl %s on the standby lacks %q:\n%s", line, want, out)
			}
		}
	}

	if out := read("--json", "audit"); strings.Contains(out, "read-database") {
		t.Errorf("the audit log records --read-database, a URL that may hold a password:\n%s", out)
	}

	// $TASKREPO_READ_DATABASE_URL names it too.
	cmd := exec.Command(binary, "count", "-t", "orders")
	cmd.Env = append(os.Environ(), databaseEnv+"="+nowhere, readDatabaseEnv+"="+standby)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "READY") {
		t.Errorf("count with $%s: %v\n%s%s", readDatabaseEnv, err, stdout.String(), stderr.String())
	}
}

// TestReadDatabaseRefusesWrites opens the store of --read-database on a
// database that takes writes (a standby promoted, or a URL given by
// mistake): its transactions are read-only there, so a write fails and
// changes nothing.
func TestReadDatabaseRefusesWrites(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			u := b.url(t)
			must(t, u, "topic", "init", "orders")
			a := &app{readDatabase: u, stdout: io.Discard, stderr: io.Discard}
			defer a.closeStores()
			reads, err := a.openReads(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if topics, err := reads.Topics(t.Context()); err != nil || len(topics) != 1 {
				t.Fatalf("a read on the read store: %v %v", topics, err)
			}
			if _, err := reads.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "x"}}); err == nil {
				t.Errorf("a push on the read store succeeded")
			}
			if _, err := reads.Initialize(t.Context(), "more"); err == nil {
				t.Errorf("a topic was added on the read store")
			}
			if out := must(t, u, "--json", "topic", "list"); strings.Contains(out, "more") {
				t.Errorf("the read store added a topic:\n%s", out)
			}
			if out := must(t, u, "count", "-t", "orders"); strings.Contains(out, "READY") {
				t.Errorf("the read store pushed a task:\n%s", out)
			}
		})
	}
}

// TestDashboardReadsFromAStandby serves the dashboard with --read-database
// on the standby of an asynchronous pair, then cuts the standby off: a
// task pushed on the primary after that is missing from the pages, which
// read the standby, and found by an action's confirmation, which reads the
// primary; the action changes the primary and its audit entry is written
// there.
func TestDashboardReadsFromAStandby(t *testing.T) {
	t.Parallel()
	pair := testdb.OwnReplicated(t, false)
	d := serveApp(t, &app{database: pair.URL(), readDatabase: pair.StandbyURL(), stdout: io.Discard, stderr: io.Discard, limits: serveLimits(defaultServePool)},
		web.Config{Refresh: 100 * time.Millisecond})
	s := d.store
	if _, err := s.Initialize(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	first, err := s.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "order-1"}})
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, d.url)
	page := fmt.Sprintf("/task?topic=orders&seq=%d", first[0].Sequence)
	waitFor(t, "the standby shows the first task", func() bool { return br.get(page).status == http.StatusOK })
	if p := br.page("/"); !strings.Contains(p, "pages read from") || !strings.Contains(p, pair.StandbyURL()[len("postgres://"):]) {
		t.Errorf("the dashboard does not say where its pages read:\n%s", p)
	}
	offer := cancelOffer(t, br.page(page), "")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := pair.HoldStandby(ctx); err != nil {
		t.Fatal(err)
	}
	late, err := s.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "order-late"}})
	if err != nil {
		t.Fatal(err)
	}
	seq := late[0].Sequence
	if r := br.get(fmt.Sprintf("/task?topic=orders&seq=%d", seq)); r.status != http.StatusNotFound {
		t.Errorf("the page of a task the standby lacks: %d, want 404 (read on the primary?)", r.status)
	}
	n := len(auditEntries(t, s))
	offer.Set("seq", fmt.Sprint(seq))
	done := act(t, br, "/action/cancel?"+offer.Encode(), fmt.Sprintf("Task %d of &#34;orders&#34;, READY, would be CANCELLED", seq))
	if !strings.Contains(done, "cancelled 1 task") {
		t.Errorf("the result page does not say what it cancelled:\n%s", done)
	}
	wantTask(t, s, seq, taskapi.Cancelled, "")
	wantAudited(t, s, n, "local", "dashboard", "cancel", 1)
}

// TestReadDatabaseThroughPgBouncer gives --read-database a URL through a
// PgBouncer in transaction mode, which refuses startup parameters it does
// not know: the reading commands, top and the dashboard's pages answer
// through it, and its transactions stay read-only there, each begun READ
// ONLY, so that a write on the read store fails and changes nothing.
func TestReadDatabaseThroughPgBouncer(t *testing.T) {
	t.Parallel()
	direct := postgresURL(t)
	bouncer := testdb.PgBouncerURL(t, direct)
	must(t, direct, "topic", "init", "orders")
	must(t, direct, "push", "-t", "orders", "order-1", "order-2")
	for line, want := range map[string]string{
		"list -t orders":    "order-2",
		"count -t orders":   "READY",
		"topic list":        "orders",
		"top --once --json": `"orders"`,
		"audit":             "topic init",
	} {
		out := must(t, nowhere, append([]string{"--read-database", bouncer}, strings.Fields(line)...)...)
		if !strings.Contains(out, want) {
			t.Errorf("taskctl %s through PgBouncer lacks %q:\n%s", line, want, out)
		}
	}

	a := &app{readDatabase: bouncer, stdout: io.Discard, stderr: io.Discard}
	defer a.closeStores()
	reads, err := a.openReads(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reads.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "order-3"}}); err == nil {
		t.Errorf("a push on the read store through PgBouncer succeeded")
	}
	if out := must(t, direct, "list", "-t", "orders"); strings.Contains(out, "order-3") {
		t.Errorf("the read store through PgBouncer pushed a task:\n%s", out)
	}

	d := serveApp(t, &app{database: direct, readDatabase: bouncer, stdout: io.Discard, stderr: io.Discard, limits: serveLimits(defaultServePool)},
		web.Config{Refresh: 100 * time.Millisecond})
	br := newBrowser(t, d.url)
	if p := br.page("/topic?topic=orders"); !strings.Contains(p, "order-1") {
		t.Errorf("the topic's page through PgBouncer lacks its task:\n%s", p)
	}
}
