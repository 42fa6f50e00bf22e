package main

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// chartOf returns the SVG of the chart of page whose title begins with
// title.
func chartOf(t *testing.T, page, title string) string {
	t.Helper()
	_, svg, ok := strings.Cut(page, `<title>`+title)
	if !ok {
		t.Fatalf("no chart %q on the page", title)
	}
	svg, _, _ = strings.Cut(svg, "</svg>")
	return svg
}

// barTotal adds up the bars of a chart of completions per minute.
func barTotal(t *testing.T, svg string) int {
	t.Helper()
	total := 0
	for _, m := range regexp.MustCompile(`<rect class="bar"[^>]*><title>[0-9:]+ UTC: ([0-9,]+)</title>`).FindAllStringSubmatch(svg, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// TestServeChartsSurviveARestart serves a database, stops the dashboard
// and starts another on it: the chart of completions per minute shows the
// last hour's again, counted in the database at start; the WAIT chart
// draws, before the new start, the least WAIT can have been (since the
// task waiting at the first reading became due), and the READY chart says
// it has nothing from before the start, and why.
func TestServeChartsSurviveARestart(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			cfg := web.Config{Refresh: 100 * time.Millisecond}
			first := startDashboard(t, db, cfg)
			seedDashboard(t, first.store, "orders") // ten FAILED, ten READY
			head := tasksOf(t, first.store, "orders")[10]
			if head.State != taskapi.Ready {
				t.Fatalf("the eleventh task is %v, want READY", head.State)
			}
			completed := func(d *dashboard) func() bool {
				br := newBrowser(t, d.url)
				return func() bool { return barTotal(t, chartOf(t, br.page("/"), "Completed per minute, every topic")) == 10 }
			}
			waitFor(t, "the first dashboard charts the ten completions", completed(first))
			second := startDashboard(t, db, cfg)
			waitFor(t, "the second dashboard charts the ten completions", completed(second))

			page := newBrowser(t, second.url).page("/topic?topic=" + url.QueryEscape("orders"))
			due := head.Created.UTC().Format("15:04:05") + " UTC"
			if wait := chartOf(t, page, "WAIT"); !strings.Contains(wait, `class="line derived"`) || !strings.Contains(wait, "had been due since "+due) {
				t.Errorf("the WAIT chart after a restart does not draw the least WAIT since %s:\n%s", due, wait)
			}
			if ready := chartOf(t, page, "READY tasks"); !strings.Contains(ready, `class="began"`) || !strings.Contains(ready, "cannot be read back") {
				t.Errorf("the READY chart after a restart does not say where its readings begin:\n%s", ready)
			}
		})
	}
}
