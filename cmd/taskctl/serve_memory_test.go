package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// fromMemory is what the results page says of a window answered from the
// dashboard's memory.
const fromMemory = "Counted by the dashboard, from memory"

// resultsFrom finds where the window of a results page begins.
var resultsFrom = regexp.MustCompile(`From (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC to`)

// TestServeResultsFromMemory reads windows of results on SQLite and
// PostgreSQL. A window within the last day comes from the dashboard's
// memory once it has counted that day, rounded to whole minutes within the
// last hour and to whole hours before, and says so; a window beyond it is
// counted in the database, in the background while the page reloads itself,
// and says so. A completion whose transaction
// commits a second after its statement, after readings have gone past its
// time, is counted all the same.
func TestServeResultsFromMemory(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			seedDashboard(t, d.store, "orders") // ten FAILED
			consumeHeld(t, d.store, "late-consumer", "orders", 1, true, time.Second)
			br := newBrowser(t, d.url)
			waitFor(t, "the dashboard counts the eleven completions", func() bool {
				page := br.page("/results?since=1h")
				return strings.Contains(page, fromMemory) && strings.Contains(page, ": 11 tasks completed")
			})
			for path, want := range map[string]struct {
				says  []string
				start string // how the window's start ends: a whole minute or hour
			}{
				"/results":                   {[]string{fromMemory, "rounded to whole minutes", "Backfilled from the database at start", ": 11 tasks completed"}, ":00.000"},
				"/results?since=24h":         {[]string{fromMemory, "rounded to whole hours", "tasks purged since still count", ": 11 tasks completed"}, ":00:00.000"},
				"/results?since=3h&until=2h": {[]string{fromMemory, "rounded to whole hours", ": 0 tasks completed"}, ":00:00.000"},
				"/results?since=48h":         {[]string{"Counted in the database", "before the last 24 hours", ": 11 tasks completed"}, ""},
			} {
				page := br.settled(path)
				for _, s := range want.says {
					if !strings.Contains(page, s) {
						t.Errorf("GET %s does not say %q:\n%s", path, s, page)
					}
				}
				if m := resultsFrom.FindStringSubmatch(page); m == nil || !strings.HasSuffix(m[1], want.start) {
					t.Errorf("GET %s: the window starts at %v, want a time ending in %q", path, m, want.start)
				}
			}
			// A window the database counts answers at once that it counts in
			// the background, and reloads itself until the count is there.
			const further = "/results?since=72h"
			if page := br.page(further); !reloads(page) || !strings.Contains(page, "counts in the background") {
				t.Errorf("GET %s, first: want a page that counts in the background and reloads itself:\n%s", further, page)
			}
			if page := br.settled(further); !strings.Contains(page, ": 11 tasks completed") {
				t.Errorf("GET %s, once counted: want the eleven completions:\n%s", further, page)
			}
		})
	}
}
