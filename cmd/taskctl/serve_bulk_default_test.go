package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// manyAtOnceState is the state select of a topic page's "Many tasks at
// once" form.
var manyAtOnceState = regexp.MustCompile(`(?s)<h2>Many tasks at once</h2>.*?<select name="state">(.*?)</select>`)

// TestServeManyTasksAtOnceDefaultsToFailed reads a topic page: the form
// that revives, reassigns or defers a range of tasks offers FAILED first
// (selected), the state an operator acts on most, and no other.
func TestServeManyTasksAtOnceDefaultsToFailed(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond})
	seedDashboard(t, d.store, "orders")
	m := manyAtOnceState.FindStringSubmatch(newBrowser(t, d.url).page("/topic?topic=orders"))
	if m == nil {
		t.Fatal("the topic page has no state select under Many tasks at once")
	}
	selected := regexp.MustCompile(`<option selected>([A-Z]+)</option>`).FindAllStringSubmatch(m[1], -1)
	if len(selected) != 1 || selected[0][1] != "FAILED" {
		t.Errorf("the selected states of Many tasks at once: %q, want FAILED alone\n%s", selected, m[1])
	}
}
