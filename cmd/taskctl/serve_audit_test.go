package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// auditEntries reads the whole audit log of s, newest first.
func auditEntries(t testing.TB, s store) []taskapi.AuditEntry {
	t.Helper()
	entries, err := s.AuditLog(t.Context(), 0, taskapi.MaxAuditPage)
	if err != nil {
		t.Fatalf("AuditLog: %v", err)
	}
	return entries
}

// wantAudited fails t unless the audit log of s holds exactly one entry
// more than before, with who, origin, action and changed, and params
// holding each of params; it returns the new number of entries.
func wantAudited(t testing.TB, s store, before int, who, origin, action string, changed int64, params ...string) int {
	t.Helper()
	entries := auditEntries(t, s)
	if len(entries) != before+1 {
		t.Fatalf("after %s the audit log holds %d entries, want %d: %+v", action, len(entries), before+1, entries)
	}
	e := entries[0]
	if e.Actor != who || e.Origin != origin || e.Action != action || e.Changed != changed {
		t.Errorf("entry of %s = %+v; want actor %q, origin %q, action %q, changed %d", action, e, who, origin, action, changed)
	}
	for _, p := range params {
		if !strings.Contains(e.Params, p) {
			t.Errorf("entry of %s has params %s, want %s in them", action, e.Params, p)
		}
	}
	if time.Since(e.At) > time.Hour || e.At.Location() != time.UTC {
		t.Errorf("entry of %s recorded at %v, want now in UTC", action, e.At)
	}
	return len(entries)
}

// TestServeAudit runs every action of the dashboard on SQLite and
// PostgreSQL: each writes exactly one entry to the audit log, with "local"
// as who (no token), what it changed and its parameters (the confirmed
// bound among them); reading every page and every confirmation writes
// none; the audit page lists the entries newest first, hostile strings
// escaped, paged with a cursor.
func TestServeAudit(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond, Expiry: time.Second})
			tasks := seedDashboard(t, d.store, "orders")
			seedDashboard(t, d.store, hostileTopic)
			br := newBrowser(t, d.url)

			for _, path := range []string{"/", "/topic?topic=orders", "/owners", "/results", "/audit",
				"/task?topic=orders&seq=" + fmt.Sprint(tasks[0].Sequence),
				"/action/activation?topic=orders&to=PAUSED", "/action/revive?topic=orders&state=FAILED",
				"/action/purge?topic=orders", "/action/expire"} {
				br.page(path)
			}
			if got := auditEntries(t, d.store); len(got) != 0 {
				t.Fatalf("reading pages and confirmations recorded %+v, want nothing", got)
			}

			n := 0
			act(t, br, "/action/activation?topic=orders&to=PAUSED", "RUNNING → PAUSED")
			n = wantAudited(t, d.store, n, "local", "dashboard", "activation", 1, `"topic":["orders"]`, `"to":["PAUSED"]`)
			act(t, br, "/action/activation?"+url.Values{"topic": {hostileTopic}, "to": {"DRAINING"}}.Encode(), "RUNNING → DRAINING")
			n = wantAudited(t, d.store, n, "local", "dashboard", "activation", 1, `"to":["DRAINING"]`)
			act(t, br, "/action/revive?topic=orders&state=FAILED&to="+fmt.Sprint(tasks[4].Sequence), "5 tasks would be made READY")
			n = wantAudited(t, d.store, n, "local", "dashboard", "revive", 5, `"state":["FAILED"]`, fmt.Sprintf(`"to":["%d"]`, tasks[4].Sequence))
			if e := auditEntries(t, d.store)[0]; !strings.Contains(e.Bound, fmt.Sprintf("to=%d", tasks[4].Sequence)) || !strings.Contains(e.Outcome, "revived 5 tasks") {
				t.Errorf("the revive's entry has bound %q and outcome %q, want its range and what it did", e.Bound, e.Outcome)
			}
			seqs := url.Values{"topic": {"orders"}, "seq": {fmt.Sprint(tasks[5].Sequence), fmt.Sprint(tasks[6].Sequence)}, "result": {"SUCCESS"}}
			act(t, br, "/action/reassign?"+seqs.Encode(), "2 tasks would be set to SUCCEEDED")
			n = wantAudited(t, d.store, n, "local", "dashboard", "reassign", 2, `"result":["SUCCESS"]`, fmt.Sprint(tasks[5].Sequence))
			act(t, br, "/action/defer?topic=orders&for=2h&seq="+fmt.Sprint(tasks[19].Sequence), "1 task would be not polled before")
			n = wantAudited(t, d.store, n, "local", "dashboard", "defer", 1, fmt.Sprint(tasks[19].Sequence))
			act(t, br, "/action/purge?topic=orders&state=FAILED,SUCCEEDED", "5 tasks would be deleted for good")
			n = wantAudited(t, d.store, n, "local", "dashboard", "purge", 5, `"state":["FAILED","SUCCEEDED"]`)
			consumeOn(t, d.store, "silent-consumer", "orders", 2, false)
			time.Sleep(1500 * time.Millisecond) // longer than the expiry
			act(t, br, "/action/expire", "2 tasks of 1 owners silent for longer than 1s would become EXPIRED")
			n = wantAudited(t, d.store, n, "local", "dashboard", "expire", 2)

			// An action whose POST is refused records nothing.
			if r := br.post("/action/activation", url.Values{"topic": {"orders"}, "to": {"RUNNING"}}); r.status != http.StatusForbidden {
				t.Errorf("POST without the CSRF value: %d, want 403", r.status)
			}
			if got := len(auditEntries(t, d.store)); got != n {
				t.Errorf("a refused POST changed the audit log to %d entries, want %d", got, n)
			}

			page := br.page("/audit")
			wantEscaped(t, "the audit page", page)
			if !strings.Contains(page, "&lt;script&gt;alert") {
				t.Errorf("the audit page does not show the hostile topic as text:\n%s", page)
			}
			if i, j := strings.Index(page, "expire"), strings.Index(page, "PAUSED"); i < 0 || j < 0 || i > j {
				t.Errorf("the audit page does not list the expiry before the first pause (newest first):\n%s", page)
			}
			wantAuditPages(t, br, n)
			if r := br.get("/audit?before=x"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "before") {
				t.Errorf("GET /audit?before=x: %d, want 400 naming before", r.status)
			}
			if r := br.get("/audit?limit=100000"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "limit") {
				t.Errorf("GET /audit?limit=100000: %d, want 400 naming limit", r.status)
			}
			if got := len(auditEntries(t, d.store)); got != n {
				t.Errorf("reading the audit page changed the log to %d entries, want %d", got, n)
			}
		})
	}
}

// auditRowStart begins a row of the audit page, before its number.
const auditRowStart = "<tr>\n<td class=\"num\">"

// wantAuditPages walks the audit page two entries at a time, by its Older
// links, and fails t unless it shows the n entries once each, newest first.
func wantAuditPages(t *testing.T, br *browser, n int) {
	t.Helper()
	var ids []int64
	for path := "/audit?limit=2"; path != ""; {
		page := br.page(path)
		for _, row := range strings.Split(page, auditRowStart)[1:] {
			var id int64
			fmt.Sscan(row[:strings.Index(row, "<")], &id)
			ids = append(ids, id)
		}
		path = ""
		if _, rest, ok := strings.Cut(page, `<a href="/audit?before=`); ok {
			q, _, _ := strings.Cut(rest, `"`)
			path = "/audit?before=" + strings.ReplaceAll(q, "&amp;", "&")
		}
	}
	if len(ids) != n {
		t.Fatalf("the audit pages of 2 list %d entries %v, want %d", len(ids), ids, n)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Errorf("the audit pages list %v: not newest first", ids)
		}
	}
}

// TestServeAuditWho checks who the log names with a token: the name given
// at login, else the token's fingerprint (and for a bearer token); a name
// with hidden characters is refused at login, which then starts no
// session.
func TestServeAuditWho(t *testing.T) {
	const token = "0123456789abcdef-token"
	d := startDashboard(t, sqliteURL(t), web.Config{Token: token, Refresh: 100 * time.Millisecond})
	seedDashboard(t, d.store, "orders")

	bad := newBrowser(t, d.url)
	if r := bad.post("/login", url.Values{"token": {token}, "name": {"eve\u202egnp.exe"}}); r.status != http.StatusBadRequest || !strings.Contains(r.body, "bidirectional") {
		t.Errorf("login with a bidirectional control in the name: %d, want 400 saying why\n%s", r.status, r.body)
	}
	if r := bad.get("/owners"); r.status != http.StatusSeeOther {
		t.Errorf("after a refused login, GET /owners: %d, want 303 to the login", r.status)
	}

	alice := newBrowser(t, d.url)
	if r := alice.post("/login", url.Values{"token": {token}, "name": {"  alice  "}, "next": {"/"}}); r.status != http.StatusSeeOther {
		t.Fatalf("login as alice: %d", r.status)
	}
	act(t, alice, "/action/activation?topic=orders&to=PAUSED", "RUNNING → PAUSED")
	n := wantAudited(t, d.store, 0, "alice", "dashboard", "activation", 1)

	anon := newBrowser(t, d.url)
	if r := anon.post("/login", url.Values{"token": {token}, "next": {"/"}}); r.status != http.StatusSeeOther {
		t.Fatalf("login without a name: %d", r.status)
	}
	act(t, anon, "/action/activation?topic=orders&to=RUNNING", "PAUSED → RUNNING")
	n = wantAudited(t, d.store, n, "token 3c18109c", "dashboard", "activation", 1)

	script := newBrowser(t, d.url)
	bearer := http.Header{"Authorization": {"Bearer " + token}, "Origin": {d.url}}
	form := confirmForm(t, script.do(http.MethodGet, "/action/activation?topic=orders&to=DRAINING", nil, bearer).body)
	if r := script.do(http.MethodPost, "/action/activation", form, bearer); r.status != http.StatusOK {
		t.Fatalf("POST with the bearer token: %d\n%s", r.status, r.body)
	}
	wantAudited(t, d.store, n, "token 3c18109c", "dashboard", "activation", 1)
}
