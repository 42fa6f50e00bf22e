package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// TestActionsAtSize measures the dashboard's actions on SQLite and
// PostgreSQL at the
// sizes the issue timed: a revive and a reassignment of 100 chosen tasks,
// a purge of 500 FAILED tasks and a deferral of 40,000 READY ones, and
// prints how long each confirmation and each POST took. It runs only with
// TASKCTL_ACTIONS_BENCH=1 and never fails on times.
func TestActionsAtSize(t *testing.T) {
	if os.Getenv("TASKCTL_ACTIONS_BENCH") != "1" {
		t.Skip("TASKCTL_ACTIONS_BENCH=1 measures the actions at size")
	}
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) { actionsAtSize(t, b.url(t)) })
	}
}

// actionsAtSize runs TestActionsAtSize on database.
func actionsAtSize(t *testing.T, database string) {
	d := startDashboard(t, database, web.Config{Refresh: time.Hour, CountBudget: time.Minute})
	if _, err := d.store.Initialize(t.Context(), "big"); err != nil {
		t.Fatal(err)
	}
	pushMany(t, d.store, "big", 700)
	failTasks(t, d.store, "big", 700)
	pushMany(t, d.store, "big", 40_000)
	failed := tasksIn(t, d.store, "big", taskapi.Failed)
	br := newBrowser(t, d.url)
	chosen := func(tasks []taskapi.Info) string {
		v := url.Values{"topic": {"big"}}
		for _, info := range tasks {
			v.Add("seq", fmt.Sprint(info.Sequence))
		}
		return v.Encode()
	}
	timeAction(t, br, "revive 100 chosen", "/action/revive?"+chosen(failed[:100]), "revived 100 tasks")
	timeAction(t, br, "reassign 100 chosen", "/action/reassign?result=SUCCESS&"+chosen(failed[100:200]), "set 100 tasks")
	timeAction(t, br, "purge 500 FAILED", "/action/purge?topic=big&state=FAILED", "deleted 500 tasks")
	timeAction(t, br, "defer 40,100 READY", "/action/defer?topic=big&for=1h", "40,100 tasks")
}

// pushMany pushes n READY tasks to topic, 10,000 a call.
func pushMany(t *testing.T, s store, topic string, n int) {
	t.Helper()
	for n > 0 {
		creations := make([]taskapi.Creation, min(n, 10_000))
		for i := range creations {
			creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("task-%d-%d", n, i)}
		}
		if _, err := s.Push(t.Context(), topic, taskapi.Append, creations); err != nil {
			t.Fatal(err)
		}
		n -= len(creations)
	}
}

// tasksIn lists the tasks of topic in state.
func tasksIn(t *testing.T, s store, topic string, state taskapi.State) []taskapi.Info {
	t.Helper()
	infos, err := s.Page(t.Context(), topic, taskapi.Listing{States: []taskapi.State{state}}, taskapi.Inception, 100_000, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// timeAction reads the confirmation at path, posts it, checks that the
// result page says done, and logs how long both took.
func timeAction(t *testing.T, br *browser, what, path, done string) {
	t.Helper()
	start := time.Now()
	confirm := br.page(path)
	confirmed := time.Since(start)
	action, _, _ := strings.Cut(path, "?")
	start = time.Now()
	r := br.post(action, confirmForm(t, confirm))
	posted := time.Since(start)
	if r.status != http.StatusOK || !strings.Contains(r.body, done) {
		t.Fatalf("%s: POST %d, want 200 saying %q:\n%s", what, r.status, done, r.body)
	}
	t.Logf("%s: confirmation %s, POST %s", what, ms(confirmed), ms(posted))
}
