package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestBrowserFailures walks the failures page in headless Chromium on
// PostgreSQL: the nav leads to it, it groups the failures by error with
// their counts, shows a hostile error as text, and the revive button of
// a group leads to a confirmation of exactly the group's tasks, which
// revives them and no other; the search page finds a task by a prefix.
func TestBrowserFailures(t *testing.T) {
	needBrowser(t)
	db := postgresURL(t)
	s := openStoreOf(t, db)
	timeouts := []taskapi.Task{
		failNew(t, s, "orders", "order-1", "gateway timeout"),
		failNew(t, s, "orders", "order-2", "gateway timeout"),
		failNew(t, s, "orders", "order-3", "gateway timeout"),
	}
	hostile := failNew(t, s, "orders", "order-4", `<img src=x onerror=alert(1)>`)
	base := startServe(t, db, nil, "--refresh", "300ms")
	b := newTab(t, 1280, 900)

	b.open(base + "/")
	b.click(`nav a[href="/failures"]`)
	if got := b.texts(`#groups tr.group td.num`); len(got) != 2 || strings.TrimSpace(got[0]) != "3" || strings.TrimSpace(got[1]) != "1" {
		t.Errorf("the groups count %q, want 3 and 1", got)
	}
	if errs := b.texts(`#groups td.error`); len(errs) != 2 || !strings.Contains(errs[1], `<img src=x onerror=alert(1)>`) {
		t.Errorf("the errors of the groups read %q", errs)
	}
	b.click(`#groups tr.group:nth-child(1) a.button.revive`)
	if rows := b.texts(`table.tasks tbody tr`); len(rows) != 3 {
		t.Errorf("the confirmation lists %d tasks, want the group's 3", len(rows))
	}
	if out := confirm(b, "3 tasks would be made READY"); !strings.Contains(out, "revived 3 tasks") {
		t.Errorf("the revival says %q", out)
	}
	for _, task := range timeouts {
		if got := stateOf(t, s, "orders", task.Sequence); got != "READY" {
			t.Errorf("task %d of the group is %s, want READY", task.Sequence, got)
		}
	}
	if got := stateOf(t, s, "orders", hostile.Sequence); got != "FAILED" {
		t.Errorf("the task of the other group is %s, want FAILED", got)
	}

	b.click(`nav a[href="/search"]`)
	b.set(`#search input[name=topic]`, "orders")
	b.set(`#search input[name=identifier]`, "order-4")
	b.click(`#search button`)
	if got := b.texts(`#results tbody td.num a`); len(got) != 1 || strings.TrimSpace(got[0]) != fmt.Sprint(hostile.Sequence) {
		t.Errorf("the search for order-4 lists %q", got)
	}

	b.do("phone width", chromedp.EmulateViewport(390, 844))
	for _, path := range []string{"/failures", "/search?topic=orders&identifier=order"} {
		b.open(base + path)
		if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
			t.Errorf("%s is wider than a phone: the page scrolls sideways", path)
		}
	}
}
