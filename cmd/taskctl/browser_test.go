package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestBrowserDashboard drives taskctl serve on PostgreSQL with headless
// Chromium as an operator would: hostile strings first, then every page,
// links, a filter, paging forward and back, every action through its
// confirmation with the database checked afterwards, the live refresh of
// the overview, and a phone's width. No page may break its CSP, open a
// dialog or run anything from the data.
func TestBrowserDashboard(t *testing.T) {
	needBrowser(t)
	db := postgresURL(t)
	s := openStoreOf(t, db)
	seedDashboard(t, s, hostileTopic)
	orders := seedOrders(t, s, 120, 30)
	base := startServe(t, db, nil, "--refresh", "300ms", "--expiry", "1s")
	b := newTab(t, 1280, 900)

	t.Run("HostileStringsAreText", func(t *testing.T) { browseHostile(b.with(t), base) })
	t.Run("FilterAndPage", func(t *testing.T) { browsePages(b.with(t), base, orders) })
	t.Run("Actions", func(t *testing.T) { browseActions(b.with(t), base, s, orders) })
	t.Run("Cancel", func(t *testing.T) { browseCancel(b.with(t), base, s, orders) })
	t.Run("LiveRefresh", func(t *testing.T) { browseLive(b.with(t), base, s) })
	t.Run("Phone", func(t *testing.T) {
		b := b.with(t)
		b.do("phone width", chromedp.EmulateViewport(390, 844))
		for _, path := range []string{"/", "/topic?topic=orders", "/owners", "/results"} {
			b.open(base + path)
			if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); wide {
				t.Errorf("%s is wider than a phone: the page scrolls sideways", path)
			}
		}
	})
}

// seedOrders registers the topic orders with n tasks, the first failed of
// them FAILED, and returns their sequences.
func seedOrders(t *testing.T, s store, n, failed int) []int64 {
	t.Helper()
	if _, err := s.Initialize(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("order-%03d", i), Input: fmt.Sprintf(`{"total":%d}`, i)}
	}
	tasks, err := s.Push(t.Context(), "orders", taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	consumeOn(t, s, "consumer-a", "orders", failed, true)
	seqs := make([]int64, n)
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}

// browseHostile follows the link of the hostile topic and opens its hostile
// task: every string shows as the text it is.
func browseHostile(b *tab, base string) {
	t := b.t
	b.open(base + "/")
	if links := b.texts("table.topics td.text a"); !contains(links, hostileTopic) || !contains(links, "orders") {
		t.Fatalf("the overview lists %q", links)
	}
	b.click(`table.topics a[href^="/topic?topic=%3Cscript"]`)
	if h1 := b.text("h1 .text"); h1 != hostileTopic {
		t.Errorf("the topic's heading is %q, want %q", h1, hostileTopic)
	}
	b.tick(`input[name=state][value=FAILED]`)
	b.click(`form[action="/topic"] button`)
	states := b.texts("table.tasks tbody td:nth-child(4)")
	if len(states) != 10 || strings.Join(states, "") != strings.Repeat("FAILED", 10) {
		t.Errorf("filtered on FAILED, the page shows %q", states)
	}
	b.click(`table.tasks tbody tr:last-child a[href^="/task"]`) // newest first: the hostile task, the oldest, is last
	if id := b.text(".fields dd.text a"); id != hostileIdentifier {
		t.Errorf("the identifier shows as %q, want %q", id, hostileIdentifier)
	}
	if input := b.text("pre.text"); !strings.Contains(input, `"note": "</pre><script>alert('input')</script>"`) {
		t.Errorf("the input shows as %q", input)
	}
}

// browsePages pages through orders, newest first, forward and back and
// to either end, then oldest first from the Sequence column's heading.
func browsePages(b *tab, base string, orders []int64) {
	t := b.t
	want := func(what string, first, n int) {
		t.Helper()
		seqs := firstSeqs(b)
		if len(seqs) != n || seqs[0] != fmt.Sprint(orders[first]) {
			t.Errorf("%s: %d tasks from %v, want %d from %d", what, len(seqs), seqs[:min(1, len(seqs))], n, orders[first])
		}
	}
	b.open(base + "/topic?topic=orders")
	want("first page", 119, 50)
	b.click(`nav.pager a[rel=next]`)
	want("second page", 69, 50)
	b.click(`nav.pager a[rel=next]`)
	want("third page", 19, 20)
	if next := b.texts(`nav.pager a[rel=next]`); len(next) != 0 {
		t.Errorf("the last page links to a next one")
	}
	b.click(`nav.pager a[rel=prev]`)
	want("back to the second page", 69, 50)
	b.click(`nav.pager a[rel=prev]`)
	want("back to the first page", 119, 50)
	b.click(`nav.pager a:last-child`)
	want("last page", 49, 50)
	b.click(`nav.pager a:first-child`)
	want("first page again", 119, 50)
	b.open(base + "/topic?topic=orders&since=1h&limit=10")
	want("a time window", 119, 10)

	b.open(base + "/topic?topic=orders")
	b.click(`table.tasks thead th.num a`)
	want("oldest first", 0, 50)
	b.click(`nav.pager a[rel=next]`)
	want("oldest first, second page", 50, 50)
	b.click(`nav.pager a:last-child`)
	want("oldest first, last page", 70, 50)
	b.click(`table.tasks thead th.num a`)
	want("newest first again", 119, 50)
}

// browseCapacity sets the capacity of orders through its button, the
// form that asks for it and the confirmation, and waits for the topic
// page to show it.
func browseCapacity(b *tab, base string, s store) {
	t := b.t
	b.open(base + "/topic?topic=orders")
	b.click(`p.actions a.button[href^="/action/capacity"]`)
	b.set(`input[name=capacity]`, "1000")
	b.click(`form.filter button`)
	if out := confirm(b, "no capacity → a capacity of 1,000 READY tasks"); !strings.Contains(out, "has a capacity of 1,000 READY tasks") {
		t.Errorf("capacity says %q", out)
	}
	if c, _ := s.Capacities(t.Context()); c["orders"].Ready != 1000 {
		t.Errorf("after setting the capacity: %v", c)
	}
	b.until("the topic page shows the capacity", func() bool {
		b.open(base + "/topic?topic=orders")
		return slices.Contains(b.texts("dl.figures dd"), "1,000")
	})
}

// browseLimits sets the limits of orders through its button, the form
// that asks for them and the confirmation, waits for the topic page to
// show them, and removes them again so that the later steps' polls take
// what they ask.
func browseLimits(b *tab, base string, s store) {
	t := b.t
	b.open(base + "/topic?topic=orders")
	b.click(`p.actions a.button[href^="/action/limits"]`)
	b.set(`input[name=active]`, "5")
	b.set(`input[name=per_identifier]`, "2")
	b.click(`form.filter button`)
	words := "at most 5 ACTIVE tasks across the fleet, at most 2 per identifier"
	if out := confirm(b, "no limits → "+words); !strings.Contains(out, "has "+words) {
		t.Errorf("limits says %q", out)
	}
	if l, _ := s.Limits(t.Context()); l["orders"] != (taskapi.Limits{Active: 5, PerIdentifier: 2}) {
		t.Errorf("after setting the limits: %v", l)
	}
	b.until("the topic page shows the limits", func() bool {
		b.open(base + "/topic?topic=orders")
		return slices.Contains(b.texts("dl.figures dd"), "5 / 2 per id")
	})
	if err := s.SetLimits(t.Context(), "orders", taskapi.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// confirm clicks the confirmation's button after checking that it says
// want, and returns the result page's text.
func confirm(b *tab, want string) string {
	b.t.Helper()
	if text := b.text(".confirm"); !strings.Contains(text, want) {
		b.t.Fatalf("the confirmation says %q, want %q", text, want)
	}
	b.click("#confirm")
	return b.text(".outcome")
}

// browseActions runs every action through its pages and checks the
// database after each.
func browseActions(b *tab, base string, s store, orders []int64) {
	t := b.t
	ctx := t.Context()
	b.open(base + "/topic?topic=orders")
	b.click(`p.actions a.button[href*="to=PAUSED"]`)
	if out := confirm(b, "RUNNING → PAUSED"); !strings.Contains(out, "is PAUSED") {
		t.Errorf("pause says %q", out)
	}
	if a, _ := s.Activations(ctx); a["orders"] != taskapi.Paused {
		t.Errorf("after pause: %v", a)
	}
	browseCapacity(b, base, s)
	browseLimits(b, base, s)

	b.open(base + "/topic?topic=orders&state=FAILED&order=oldest")
	b.tick(`table.tasks tbody tr:nth-child(1) input[name=seq]`)
	b.tick(`table.tasks tbody tr:nth-child(2) input[name=seq]`)
	b.click(`#selected button[formaction="/action/revive"]`)
	confirm(b, "2 tasks would be made READY")
	wantStatesOf(t, s, orders[:2], taskapi.Ready)

	b.open(base + "/topic?topic=orders")
	b.set(`form:not(#selected) select[name=state]`, "FAILED")
	b.set(`form:not(#selected) input[name=from]`, fmt.Sprint(orders[2]))
	b.set(`form:not(#selected) input[name=to]`, fmt.Sprint(orders[9]))
	b.click(`form:not(#selected) button[formaction="/action/reassign"]`)
	b.set(`select[name=result]`, "SUCCESS")
	b.click(`form.filter button`)
	confirm(b, "8 tasks would be set to SUCCEEDED")
	wantStatesOf(t, s, orders[2:10], taskapi.Succeeded)

	b.open(base + "/topic?topic=orders&state=READY&order=oldest")
	b.tick(`table.tasks tbody tr:nth-child(1) input[name=seq]`)
	b.click(`#selected button[formaction="/action/defer"]`)
	b.set(`input[name=for]`, "2h")
	b.click(`form.filter button`)
	confirm(b, "1 task would be not polled before")
	if info, _, _ := s.Lookup(ctx, "orders", orders[0]); time.Until(info.NotBefore) < time.Hour {
		t.Errorf("the deferred task %d is due %v", orders[0], info.NotBefore)
	}

	b.open(base + "/topic?topic=orders")
	b.set(`form[action="/action/purge"] input[name=state]`, "SUCCEEDED")
	b.click(`form[action="/action/purge"] button`)
	confirm(b, "8 tasks would be deleted for good")
	if n := len(tasksOf(t, s, "orders")); n != len(orders)-8 {
		t.Errorf("after the purge orders holds %d tasks, want %d", n, len(orders)-8)
	}

	consumeOn(t, s, "silent-owner", "orders", 3, false)
	time.Sleep(1500 * time.Millisecond) // beyond --expiry
	b.open(base + "/owners")
	b.click(`a.button[href="/action/expire"]`)
	confirm(b, "3 tasks of 1 owners")
	if n := stateCounts(t, s, "orders")[taskapi.Expired]; n != 3 {
		t.Errorf("after expire orders holds %d EXPIRED tasks, want 3", n)
	}
}

// browseCancel cancels the last READY task of orders from its page, with
// a reason, and the READY task of the identifier of the one before from
// the page of its tasks, each through its confirmation, and checks the
// database after each.
func browseCancel(b *tab, base string, s store, orders []int64) {
	t := b.t
	last, before := orders[len(orders)-1], orders[len(orders)-2]
	b.open(fmt.Sprintf("%s/task?topic=orders&seq=%d", base, last))
	b.set(`form.cancel-offer input[name=reason]`, "customer left")
	b.click(`form.cancel-offer button`)
	if out := confirm(b, fmt.Sprintf("Task %d of \"orders\", READY, would be CANCELLED", last)); !strings.Contains(out, `cancelled 1 task of "orders"`) {
		t.Errorf("cancel says %q", out)
	}
	wantStatesOf(t, s, []int64{last}, taskapi.Cancelled)
	if info, _, _ := s.Lookup(t.Context(), "orders", last); info.Output != taskapi.CancelOutput("customer left") {
		t.Errorf("the output of the cancelled task is %q", info.Output)
	}
	b.open(fmt.Sprintf("%s/task?topic=orders&seq=%d", base, last))
	if state := b.text("h1 .state"); state != "CANCELLED" {
		t.Errorf("the page of the cancelled task shows it %s", state)
	}
	identifier := fmt.Sprintf("order-%03d", len(orders)-2)
	b.open(base + "/topic?topic=orders&identifier=" + identifier)
	b.click(`form.cancel-offer button`)
	confirm(b, fmt.Sprintf("1 READY task of identifier %q", identifier))
	wantStatesOf(t, s, []int64{before}, taskapi.Cancelled)
}

// wantStatesOf fails t unless the tasks of orders with seqs are in state.
func wantStatesOf(t *testing.T, s store, seqs []int64, state taskapi.State) {
	t.Helper()
	for _, seq := range seqs {
		if info, _, err := s.Lookup(t.Context(), "orders", seq); err != nil || info.State != state {
			t.Errorf("task %d is %v (%v), want %v", seq, info.State, err, state)
		}
	}
}

// browseLive waits on the overview, without reloading it, for a topic made
// meanwhile to show.
func browseLive(b *tab, base string, s store) {
	b.open(base + "/")
	eval[bool](b, `window.__stay = true`)
	if _, err := s.Initialize(b.t.Context(), "fresh-topic"); err != nil {
		b.t.Fatal(err)
	}
	b.until("the overview shows the new topic by itself", func() bool {
		return contains(b.texts("table.topics td.text a"), "fresh-topic")
	})
	if !eval[bool](b, `window.__stay === true`) || !strings.Contains(b.text("#live-state"), "Live") {
		b.t.Errorf("the overview was reloaded instead of refreshed, or says %q", b.text("#live-state"))
	}
	b.check()
}
