//go:build heavy

package main

import (
	"context"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The million-task topic of TestServeAMillionTasks: every task's input
// names one of millionCustomers customers, in turn; the oldest
// millionFailures tasks failed, with one of millionErrors errors in turn.
const (
	millionTasks     = 1_000_000
	millionCustomers = 5_000
	millionFailures  = 100_000
	millionErrors    = 20
)

// TestServeAMillionTasks walks the dashboard's filters over a topic of a
// million tasks on PostgreSQL with the default read timeout (2 s), while a
// consumer fails tasks beside it (issue 42, points 1, 4 and 9; the walk
// found a search of a JSON field answering 503 in 1 load of 6). Every
// page answers 200. A search of a field of the input, followed from page
// to page ("Search the older tasks") to the oldest task, finds exactly
// the 200 tasks of the customer, each once. The failures page groups the
// 100,000 failures by error, all of them or the newest it could read
// within its share of the read timeout, as it says, with counts that
// match; a search of an error's text in the outputs answers with what it
// found within its bound.
func TestServeAMillionTasks(t *testing.T) {
	d := startDashboard(t, postgresURL(t), web.Config{Refresh: time.Second})
	number := pushMillion(t, d.store)
	failOldest(t, d.store, "bulk-failer", "orders", millionFailures, func(seq int64) string {
		return fmt.Sprintf("error %d: the gateway said no", number[seq]%millionErrors)
	})
	perError := failedPerError(number)
	stop := failBeside(t, d.store)
	br := newBrowser(t, d.url)

	found, pages := walkFieldSearch(t, br, "/search?topic=orders&field=customer.id&value=42")
	if len(found) != millionTasks/millionCustomers {
		t.Errorf("the search of customer.id = 42 found %d tasks in %d pages, want %d", len(found), pages, millionTasks/millionCustomers)
	}
	for seq, times := range found {
		if number[seq]%millionCustomers != 42 || times != 1 {
			t.Errorf("the search found task %d %d times; its customer is %d", seq, times, number[seq]%millionCustomers)
		}
	}
	t.Logf("the search of a field read a million inputs in %d pages", pages)

	began := time.Now()
	page := br.page("/failures?topic=orders&state=FAILED")
	took := time.Since(began) // logged, not asserted: the page says what it read
	stop()
	groups := regexp.MustCompile(`<td class="num">([\d,]+)</td>\s*<td class="text error">error (\d+): the gateway said no</td>`).FindAllStringSubmatch(page, -1)
	all := strings.Contains(page, "grouped by their last error: all ")
	newest := regexp.MustCompile(`the newest ([\d,]+) of ([\d,]+)`).FindStringSubmatch(page)
	switch {
	case all:
		if len(groups) != millionErrors {
			t.Errorf("the failures page groups all, but shows %d groups of the %d errors", len(groups), millionErrors)
		}
		for _, g := range groups {
			if want := perError[g[2]]; digits(g[1]) != want {
				t.Errorf("the group of error %s counts %s, want %s", g[2], g[1], want)
			}
		}
		t.Logf("the failures page grouped all %d failures, and those of the consumer beside, in %v", millionFailures, took)
	case newest != nil:
		t.Logf("the failures page grouped the newest %s of %s failures within its share of the read timeout (%v)", newest[1], newest[2], took)
	default:
		t.Errorf("the failures page says neither that it grouped all nor how many:\n%s", page)
	}

	filtered := br.page("/failures?topic=orders&output=" + url.QueryEscape("error 7:"))
	if g := regexp.MustCompile(`<td class="num">([\d,]+)</td>\s*<td class="text error">error 7: the gateway said no</td>`).FindStringSubmatch(filtered); g == nil ||
		strings.Contains(filtered, "grouped by their last error: all ") && digits(g[1]) != perError["7"] {
		t.Errorf("the failures of error 7 are not grouped as %s:\n%s", perError["7"], filtered)
	}
	r := br.get("/topic?topic=orders&state=FAILED&field=customer.id&value=42")
	if to := r.header.Get("Location"); r.status != http.StatusSeeOther || br.get(to).status != http.StatusOK {
		t.Errorf("a topic's page filtered by a field: %d to %q, want 303 to a search that answers", r.status, to)
	}
	r = br.get("/search?topic=orders&whole=1&output=" + url.QueryEscape("error 7: the gateway"))
	if r.status != http.StatusOK || !strings.Contains(r.body, "tasks found") {
		t.Errorf("a search of an error's text in the outputs: %d\n%s", r.status, r.body)
	}
	for _, path := range []string{"/topic?topic=orders", "/topic?topic=orders&order=oldest", "/topic?topic=orders&state=FAILED", "/"} {
		if r := br.get(path); r.status != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, r.status, r.body)
		}
	}
}

// failedPerError returns how many of the millionFailures oldest tasks
// (by sequence, as failOldest polls them) have each error, by the error's
// number as the page writes it, in digits without separators. Concurrent
// pushes may interleave their sequences, so the oldest tasks need not be
// whole batches: about, not exactly, millionFailures/millionErrors each.
func failedPerError(number map[int64]int) map[string]string {
	seqs := slices.Sorted(maps.Keys(number))
	counts := map[int]int{}
	for _, seq := range seqs[:millionFailures] {
		counts[number[seq]%millionErrors]++
	}
	out := map[string]string{}
	for e, n := range counts {
		out[strconv.Itoa(e)] = strconv.Itoa(n)
	}
	return out
}

// digits is a count as the page writes it (1,234), without its separators.
func digits(count string) string { return strings.ReplaceAll(count, ",", "") }

// pushMillion pushes millionTasks tasks into the topic orders, four
// pushers at a time, and returns the number of each task (its place in
// the order the test made them, which its input and identifier carry)
// by its sequence: the pushers' batches take their sequences in any
// order.
func pushMillion(t *testing.T, s store) map[int64]int {
	t.Helper()
	if _, err := s.Initialize(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	const batch = 1000
	seqs := make([][]int64, millionTasks/batch)
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(4)
	for b := range seqs {
		g.Go(func() error {
			creations := make([]taskapi.Creation, batch)
			for i := range creations {
				n := b*batch + i
				creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("order-%07d", n),
					Input: fmt.Sprintf(`{"customer": {"id": %d}, "lines": [{"sku": "A-%d", "qty": 2}]}`, n%millionCustomers, n%97)}
			}
			tasks, err := s.Push(ctx, "orders", taskapi.Append, creations)
			for _, task := range tasks {
				seqs[b] = append(seqs[b], task.Sequence)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	number := make(map[int64]int, millionTasks)
	for b, batchSeqs := range seqs {
		for i, seq := range batchSeqs {
			number[seq] = b*batch + i
		}
	}
	return number
}

// walkFieldSearch follows a search of a field from page to page to the
// oldest task, and returns how often it found each task, and the pages.
func walkFieldSearch(t *testing.T, br *browser, path string) (map[int64]int, int) {
	t.Helper()
	found := map[int64]int{}
	older := regexp.MustCompile(`<a id="older" href="([^"]+)"`)
	pages := 0
	for ; path != "" && pages < 1000; pages++ {
		r := br.get(path)
		if r.status != http.StatusOK {
			t.Fatalf("page %d of the search (%s): %d, want 200\n%s", pages+1, path, r.status, r.body)
		}
		for _, seq := range foundSeqs(r.body) {
			n, err := strconv.ParseInt(seq, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			found[n]++
		}
		path = ""
		if m := older.FindStringSubmatch(r.body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if path != "" {
		t.Fatalf("the search did not reach the oldest task in %d pages", pages)
	}
	return found, pages
}

// failBeside fails the oldest READY tasks of orders, a hundred every 50
// ms, with an error of its own, until the returned stop is called (or
// the test ends), which fails the test if one of them failed.
func failBeside(t *testing.T, s store) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	failed := make(chan error, 1)
	go func() {
		defer close(failed)
		for ctx.Err() == nil {
			err := failOldestIn(ctx, s, "beside", "orders", 100, func(int64) string { return "late: the consumer beside" })
			if err != nil && ctx.Err() == nil {
				failed <- err
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-failed; err != nil {
				t.Errorf("the consumer beside: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
