package main

import (
	"strings"
	"testing"
	"time"
)

// TestBrowserDeferLeavesLaterTasks defers a topic's READY tasks for an
// hour in Chromium, through the form that asks for how long (issue 42,
// point 2: "defer for 1 h" brought 3,000 tasks due in 6 h to 1 h): the
// confirmation says how many are due later already and are left, and they
// keep their due time.
func TestBrowserDeferLeavesLaterTasks(t *testing.T) {
	needBrowser(t)
	db := sqliteURL(t)
	s := openStoreOf(t, db)
	now, later := pushLater(t, s, "orders", 2, 3)
	b := newTab(t, 1280, 900)
	base := startServe(t, db, nil, "--refresh", "300ms")

	start := time.Now()
	b.open(base + "/action/defer?topic=orders&state=READY")
	b.set(`input[name=for]`, "1h")
	b.click(`form.filter button`)
	if out := confirm(b, "3 tasks due later than that already would be left as they are"); !strings.Contains(out, "2 tasks of") {
		t.Errorf("the deferral says %q, want 2 tasks deferred", out)
	}
	wantDue(t, s, "orders", now, start.Add(time.Hour-time.Minute), time.Now().Add(time.Hour+time.Minute), "deferred for 1h in Chromium")
	wantDue(t, s, "orders", later, start.Add(6*time.Hour-time.Minute), time.Now().Add(6*time.Hour+time.Minute), "due in 6h, deferred for 1h in Chromium")
}
