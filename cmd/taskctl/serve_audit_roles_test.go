package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The grants of README's "Privileges" on PostgreSQL: the application
// role's (which records actions; taskctl also reads the version table to
// check the schema), and a read-only role's.
var (
	appGrants = []string{
		"GRANT SELECT ON taskrepo_db_version TO {role}",
		"GRANT USAGE ON SCHEMA public TO {role}",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON task, task_topic, task_owner, task_hold TO {role}",
		"GRANT USAGE ON SEQUENCE task_sequence TO {role}",
		"GRANT EXECUTE ON FUNCTION task_truncate(text), task_analyze(text[]) TO {role}",
		"GRANT SELECT, INSERT, UPDATE ON task_activation, task_leader TO {role}",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON task_schedule TO {role}",
		"GRANT SELECT, INSERT ON task_audit TO {role}",
	}
	readOnlyGrants = []string{
		"GRANT USAGE ON SCHEMA public TO {role}",
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
	}
)

// roleURL creates a login role on the PostgreSQL database of dbURL with
// grants, dropped when t ends, and returns the URL that logs in as it.
func roleURL(t *testing.T, dbURL string, grants []string) string {
	t.Helper()
	ctx := t.Context()
	admin, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	role := "dash_" + strings.ToLower(rand.Text()[:10])
	exec := func(ctx context.Context, statement string) {
		t.Helper()
		if _, err := admin.Exec(ctx, strings.ReplaceAll(statement, "{role}", role)); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	exec(ctx, "CREATE ROLE {role} LOGIN")
	t.Cleanup(func() {
		defer admin.Close()
		exec(context.Background(), "DROP OWNED BY {role}")
		exec(context.Background(), "DROP ROLE {role}")
	})
	for _, grant := range grants {
		exec(ctx, grant)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// TestServeAuditRoles serves PostgreSQL as the roles of README: as the
// application role, an action writes its entry; as a read-only role, with
// --read-only, the audit page lists the entries; and as a role that may
// not write the log, an action still stands, and its result page and the
// server's log say that its record failed.
func TestServeAuditRoles(t *testing.T) {
	dbURL := postgresURL(t)
	app := startDashboard(t, roleURL(t, dbURL, appGrants), web.Config{Refresh: 100 * time.Millisecond})
	seedDashboard(t, app.store, "orders")
	act(t, newBrowser(t, app.url), "/action/activation?topic=orders&to=PAUSED", "RUNNING → PAUSED")
	wantAudited(t, app.store, 0, "local", "dashboard", "activation", 1, `"topic":["orders"]`)

	ro := startDashboard(t, roleURL(t, dbURL, readOnlyGrants), web.Config{ReadOnly: true, Refresh: 100 * time.Millisecond})
	page := newBrowser(t, ro.url).page("/audit")
	if !strings.Contains(page, "activation") || !strings.Contains(page, "PAUSED") {
		t.Errorf("the read-only role's audit page does not list the pause:\n%s", page)
	}

	logged := &lockedLog{}
	noAudit := appGrants[:len(appGrants)-1]
	mute := startDashboard(t, roleURL(t, dbURL, noAudit), web.Config{Refresh: 100 * time.Millisecond, Log: logged})
	done := act(t, newBrowser(t, mute.url), "/action/activation?topic=orders&to=RUNNING", "PAUSED → RUNNING")
	if !strings.Contains(done, "The change above stands, but its audit record failed") {
		t.Errorf("the result page does not say that the audit record failed:\n%s", done)
	}
	if a, _ := app.store.Activations(t.Context()); a["orders"] != taskapi.Running {
		t.Errorf("after a resume whose record failed, activations are %v, want orders RUNNING", a)
	}
	if got := auditEntries(t, app.store); len(got) != 1 {
		t.Errorf("the audit log holds %+v, want the pause alone", got)
	}
	waitFor(t, "the server's log of the failed record", func() bool { return strings.Contains(logged.String(), "audit record of activation") })
}

// TestAuditCommandRecordFails runs a command as a role that may not write
// the audit log: the change stands, exits 0, and stderr says that its
// record failed.
func TestAuditCommandRecordFails(t *testing.T) {
	dbURL := postgresURL(t)
	must(t, dbURL, "topic", "init", "orders")
	db := roleURL(t, dbURL, appGrants[:len(appGrants)-1])
	out := taskctl(t, db, "", "topic", "pause", "orders")
	if out.code != 0 || !strings.Contains(out.stderr, "the change stands, but its audit record failed") {
		t.Errorf("pause without the right to record: exit %d, stderr %q; want 0 and the failed record said", out.code, out.stderr)
	}
	if text := must(t, dbURL, "topic", "list"); !strings.Contains(text, "PAUSED") {
		t.Errorf("the pause did not stand:\n%s", text)
	}
	if got := cliAudit(t, dbURL); len(got) != 1 || got[0].Action != "topic init" {
		t.Errorf("the audit log holds %+v, want the init alone", got)
	}
}

// lockedLog is a server log that a test reads while the server writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeDeniedActions serves PostgreSQL as a role that may read every
// table but write none of the tasks' (issue 42: a pause answered 500, a
// purge 200 "deleted 0"). Every action answers alike: 403, the privilege
// the database refused named, nothing changed; the attempt is in the
// audit log when the role may write it, and the page says that its record
// failed when it may not.
func TestServeDeniedActions(t *testing.T) {
	dbURL := postgresURL(t)
	owner := startDashboard(t, dbURL, web.Config{Refresh: 100 * time.Millisecond})
	tasks := seedDashboard(t, owner.store, "orders")
	before := stateCounts(t, owner.store, "orders")
	ready := fmt.Sprintf("seq=%d&seq=%d", tasks[12].Sequence, tasks[13].Sequence)
	failed := fmt.Sprintf("seq=%d&seq=%d", tasks[2].Sequence, tasks[3].Sequence)
	attempts := []struct{ action, path string }{
		{"activation", "/action/activation?topic=orders&to=PAUSED"},
		{"capacity", "/action/capacity?topic=orders&capacity=1000"},
		{"limits", "/action/limits?topic=orders&active=10&per_identifier=1"},
		{"revive", "/action/revive?topic=orders&state=FAILED"},
		{"reassign", "/action/reassign?topic=orders&result=SUCCESS&" + failed},
		{"defer", "/action/defer?topic=orders&state=READY&for=1h"},
		{"cancel", "/action/cancel?topic=orders&" + ready},
		{"purge", "/action/purge?topic=orders&state=FAILED"},
	}
	deny := func(br *browser, path string) string {
		t.Helper()
		confirm := br.page(path)
		action, _, _ := strings.Cut(path, "?")
		r := br.post(action, confirmForm(t, confirm))
		if r.status != http.StatusForbidden || !strings.Contains(r.body, "permission denied for table task") ||
			!strings.Contains(r.body, "Nothing changed") {
			t.Errorf("POST %s as a role that may not write: %d, want 403 naming the privilege and that nothing changed:\n%s", path, r.status, r.body)
		}
		return r.body
	}

	audited := append(slices.Clone(readOnlyGrants), "GRANT INSERT ON task_audit TO {role}")
	recorder := startDashboard(t, roleURL(t, dbURL, audited), web.Config{Refresh: 100 * time.Millisecond})
	br := newBrowser(t, recorder.url)
	for _, a := range attempts {
		n := len(auditEntries(t, owner.store))
		deny(br, a.path)
		entries := auditEntries(t, owner.store)
		if len(entries) != n+1 || entries[0].Action != a.action || entries[0].Changed != 0 ||
			!strings.Contains(entries[0].Outcome, "denied") {
			t.Errorf("the denied %s is not in the audit log as denied: %+v", a.action, entries[:min(len(entries), 1)])
		}
	}

	reader := startDashboard(t, roleURL(t, dbURL, readOnlyGrants), web.Config{Refresh: 100 * time.Millisecond})
	if body := deny(newBrowser(t, reader.url), attempts[0].path); !strings.Contains(body, "Its audit record failed too") {
		t.Errorf("a denied action whose record failed does not say so:\n%s", body)
	}

	wantCounts(t, owner.store, "orders", before)
	if a, _ := owner.store.Activations(t.Context()); a["orders"] == taskapi.Paused {
		t.Errorf("a denied pause paused the topic")
	}
}
