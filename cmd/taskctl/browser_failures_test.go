package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestBrowserFailures walks the failures page in headless Chromium on
// PostgreSQL: the nav leads to it, it groups the failures by error with
// their counts, shows a hostile error as text, and the revive button of
// a group leads to a confirmation of exactly the group's tasks, naming
// their error, which revives them and no other; the cancel button of a
// group of SUSPENDED tasks cancels them; the filters of the failures page
// and of a topic's page by the text of the output find what they should;
// the search page finds a task by a prefix.
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
	waiting := failNew(t, s, "orders", "order-5", "awaiting stock")
	if err := s.Reassign(t.Context(), "orders", []taskapi.Assignment{{Task: waiting, Result: taskapi.Suspension}}); err != nil {
		t.Fatal(err)
	}
	base := startServe(t, db, nil, "--refresh", "300ms")
	b := newTab(t, 1280, 900)

	b.open(base + "/")
	b.click(`nav a[href="/failures"]`)
	if got := b.texts(`#groups tr.group td.num`); !slices.Equal(trimmed(got), []string{"3", "1", "1"}) {
		t.Errorf("the groups count %q, want 3, 1 and 1", got)
	}
	if errs := b.texts(`#groups td.error`); len(errs) != 3 || !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, `<img src=x onerror=alert(1)>`) }) {
		t.Errorf("the errors of the groups read %q", errs)
	}
	b.set(`form.filter input[name=output]`, "gateway")
	b.click(`form.filter button`)
	if got := b.texts(`#groups tr.group td.num`); !slices.Equal(trimmed(got), []string{"3"}) {
		t.Errorf("the failures whose output holds \"gateway\" are grouped as %q, want one group of 3", got)
	}
	b.open(base + "/topic?topic=orders")
	b.set(`form.filter input[name=output]`, "onerror")
	b.click(`form.filter button`)
	if got := b.texts(`#results tbody td.num a`); len(got) != 1 || strings.TrimSpace(got[0]) != fmt.Sprint(hostile.Sequence) {
		t.Errorf("the topic's tasks whose output holds \"onerror\" are %q, want task %d", got, hostile.Sequence)
	}
	b.click(`nav a[href="/failures"]`)
	b.click(`#groups tr.group:nth-child(1) a.every`)
	if got := b.text(`#found`); !strings.Contains(got, "3 tasks found") {
		t.Errorf("the search of every task of the group's error says %q, want 3 found", got)
	}
	b.click(`nav a[href="/failures"]`)
	b.click(`#groups tr.group:nth-child(1) a.button.revive`)
	if rows := b.texts(`table.tasks tbody tr`); len(rows) != 3 {
		t.Errorf("the confirmation lists %d tasks, want the group's 3", len(rows))
	}
	if out := confirm(b, `3 tasks of "orders" whose last error is «gateway timeout»`); !strings.Contains(out, "revived 3 tasks") {
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

	b.click(`nav a[href="/failures"]`)
	b.click(`#groups a.button.cancel`)
	if out := confirm(b, `1 task of "orders" whose last error is «awaiting stock»`); !strings.Contains(out, "cancelled 1 task") {
		t.Errorf("the cancellation of the SUSPENDED group says %q", out)
	}
	if got := stateOf(t, s, "orders", waiting.Sequence); got != "CANCELLED" {
		t.Errorf("the SUSPENDED task of the group is %s, want CANCELLED", got)
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

// trimmed returns texts without their surrounding spaces.
func trimmed(texts []string) []string {
	out := make([]string, len(texts))
	for i, text := range texts {
		out[i] = strings.TrimSpace(text)
	}
	return out
}
