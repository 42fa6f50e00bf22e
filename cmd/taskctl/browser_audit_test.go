package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestBrowserAudit drives the audit log in headless Chromium on SQLite: a
// pause of a topic with a hostile name, confirmed in the browser, shows
// on the audit page (reached by the menu) newest first, by "local", with
// the name as text; a recorded actor with a bidirectional control is
// marked; nothing from the data runs.
func TestBrowserAudit(t *testing.T) {
	needBrowser(t)
	db := sqliteURL(t)
	s := openStoreOf(t, db)
	seedDashboard(t, s, hostileTopic)
	const sneaky = "mallory\u202egnp.exe"
	if _, err := s.Record(t.Context(), taskapi.AuditEntry{Actor: sneaky, Origin: "cli", Action: "purge",
		Params: `{"topic":["<img src=x onerror=alert(1)>"]}`, Outcome: `<script>alert("outcome")</script>`}); err != nil {
		t.Fatal(err)
	}
	base := startServe(t, db, nil, "--refresh", "300ms")
	b := newTab(t, 1280, 900)

	b.open(base + "/action/activation?" + url.Values{"topic": {hostileTopic}, "to": {"PAUSED"}}.Encode())
	b.click("#confirm")
	b.click(`main a[href="/audit"]`)
	b.click(`nav a[href="/audit"]`) // the menu leads there too
	if here := b.text(`nav a[aria-current=page]`); here != "Audit" {
		t.Errorf("the menu marks %q on the audit page, want Audit", here)
	}
	rows := b.texts("table.audit tbody tr")
	if len(rows) != 2 {
		t.Fatalf("the audit page lists %d entries, want 2: %q", len(rows), rows)
	}
	first := b.texts("table.audit tbody tr:first-child td")
	if first[2] != "local" || first[3] != "dashboard" || first[4] != "activation" || first[7] != "1" {
		t.Errorf("the newest entry reads %q; want local, dashboard, activation, 1", first)
	}
	if params := b.text("table.audit tbody tr:first-child td:nth-child(6) a"); params != hostileTopic {
		t.Errorf("the topic of the pause shows as %q, want %q", params, hostileTopic)
	}
	second := b.texts("table.audit tbody tr:nth-child(2) td")
	if !strings.HasPrefix(second[2], sneaky) || len(b.texts("table.audit tbody tr:nth-child(2) td:nth-child(3) .hidden-chars")) != 1 {
		t.Errorf("the actor with a bidirectional control shows as %q, unmarked", second[2])
	}
	if second[8] != `<script>alert("outcome")</script>` {
		t.Errorf("the hostile outcome shows as %q, want its text", second[8])
	}
}
