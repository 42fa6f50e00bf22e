package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestBrowserCancelMany cancels in Chromium, as an operator would, a
// tenant whose tasks carry identifiers of their own, from what a search of
// its prefix found, and two tasks ticked on a topic's page, each through
// its confirmation; the database has them CANCELLED and nothing else.
func TestBrowserCancelMany(t *testing.T) {
	needBrowser(t)
	db := sqliteURL(t)
	s := openStoreOf(t, db)
	if _, err := s.Initialize(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	var creations []taskapi.Creation
	for i := range 20 {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("tenant-042/%02d", i)})
	}
	for i := range 5 {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("other-%d", i)})
	}
	pushed, err := s.Push(t.Context(), "orders", taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, 1280, 900)
	base := startServe(t, db, nil, "--refresh", "300ms")

	b.open(base + "/search")
	b.set(`#search input[name=topic]`, "orders")
	b.set(`#search input[name=identifier]`, "tenant-042/")
	b.click(`#search button`)
	b.click(`#found-actions a.button.cancel`)
	if out := confirm(b, "20 tasks"); !strings.Contains(out, "cancelled 20 tasks") {
		t.Errorf("the cancellation of what the search found says %q", out)
	}

	b.open(base + "/topic?topic=orders&state=READY&order=oldest")
	b.tick(`table.tasks tbody tr:nth-child(1) input[name=seq]`)
	b.tick(`table.tasks tbody tr:nth-child(2) input[name=seq]`)
	b.click(`#selected button[formaction="/action/cancel"]`)
	if out := confirm(b, "2 tasks"); !strings.Contains(out, "cancelled 2 tasks") {
		t.Errorf("the cancellation of the ticked tasks says %q", out)
	}
	for i, task := range pushed {
		want := taskapi.Cancelled
		if i >= 22 {
			want = taskapi.Ready
		}
		if info, _, err := s.Lookup(t.Context(), "orders", task.Sequence); err != nil || info.State != want {
			t.Errorf("task %d (%s) is %v (%v), want %v", task.Sequence, task.Identifier, info.State, err, want)
		}
	}
}

// TestBrowserDeniedAction pauses a topic in Chromium on a dashboard whose
// PostgreSQL role may read but not write: the page after the confirmation
// says 403, names the table the privilege is on and that nothing changed,
// and the topic runs on.
func TestBrowserDeniedAction(t *testing.T) {
	needBrowser(t)
	dbURL := postgresURL(t)
	must(t, dbURL, "topic", "init", "orders")
	grants := append(slices.Clone(readOnlyGrants), "GRANT INSERT ON task_audit TO {role}")
	base := startServe(t, roleURL(t, dbURL, grants), nil, "--refresh", "300ms")
	b := newTab(t, 1280, 900)
	b.open(base + "/topic?topic=orders")
	b.click(`p.actions a.button[href*="to=PAUSED"]`)
	b.click("#confirm")
	if h1, problem := b.text("h1"), b.text("p.problem"); !strings.Contains(h1, "403") ||
		!strings.Contains(problem, "permission denied for table task_activation") || !strings.Contains(problem, "Nothing changed") {
		t.Errorf("a denied pause shows %q: %q", h1, problem)
	}
	if text := must(t, dbURL, "topic", "list"); strings.Contains(text, "PAUSED") {
		t.Errorf("a denied pause paused the topic:\n%s", text)
	}
}
