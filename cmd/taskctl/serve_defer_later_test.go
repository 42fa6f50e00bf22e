package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// pushLater pushes, into a new topic, plain READY tasks and tasks due in
// six hours, and returns both.
func pushLater(t *testing.T, s store, topic string, plain, later int) (now, due []taskapi.Task) {
	t.Helper()
	if _, err := s.Initialize(t.Context(), topic); err != nil {
		t.Fatal(err)
	}
	sixHours := time.Now().Add(6 * time.Hour)
	var creations []taskapi.Creation
	for i := range plain + later {
		c := taskapi.Creation{Identifier: fmt.Sprint("id-", i)}
		if i >= plain {
			c.NotBefore = sixHours
		}
		creations = append(creations, c)
	}
	tasks, err := s.Push(t.Context(), topic, taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	return tasks[:plain], tasks[plain:]
}

// wantDue fails t unless every task of tasks is due between from and to.
func wantDue(t *testing.T, s store, topic string, tasks []taskapi.Task, from, to time.Time, what string) {
	t.Helper()
	for _, task := range tasks {
		info, _, err := s.Lookup(t.Context(), topic, task.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if info.NotBefore.Before(from) || info.NotBefore.After(to) {
			t.Errorf("%s: task %d is due at %v, want between %v and %v", what, task.Sequence, info.NotBefore, from, to)
		}
	}
}

// TestServeDeferNeverBringsATaskSooner defers, through the dashboard on
// SQLite and PostgreSQL, the READY tasks of a topic "for 1h" while some
// are due in six hours: those keep their time, and the confirmation and
// the result say how many; chosen tasks likewise. "until now" still makes every task pollable at once.
func TestServeDeferNeverBringsATaskSooner(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			now, later := pushLater(t, d.store, "orders", 4, 3)
			br := newBrowser(t, d.url)
			start := time.Now()
			confirm := br.page("/action/defer?topic=orders&state=READY&for=1h")
			if !strings.Contains(confirm, "4 tasks would be not polled before") || !strings.Contains(confirm, "3 tasks due later than that already would be left as they are") {
				t.Errorf("the confirmation of a deferral for 1h does not say 4 deferred and 3 left:\n%s", confirm)
			}
			done := act(t, br, "/action/defer?topic=orders&state=READY&for=1h", "3 tasks due later than that already would be left as they are")
			if !strings.Contains(done, "4 tasks of") || !strings.Contains(done, "3 tasks due later than that already were left as they are") {
				t.Errorf("the result of a deferral for 1h does not say 4 deferred and 3 left:\n%s", done)
			}
			wantDue(t, d.store, "orders", now, start.Add(time.Hour-time.Minute), time.Now().Add(time.Hour+time.Minute), "deferred for 1h")
			wantDue(t, d.store, "orders", later, start.Add(6*time.Hour-time.Minute), time.Now().Add(6*time.Hour+time.Minute), "due in 6h, deferred for 1h")

			chosen := url.Values{"topic": {"orders"}, "for": {"2h"}, "seq": {fmt.Sprint(now[0].Sequence), fmt.Sprint(later[0].Sequence)}}
			act(t, br, "/action/defer?"+chosen.Encode(), "1 task due later than that already would be left as they are")
			wantDue(t, d.store, "orders", now[:1], start.Add(2*time.Hour-time.Minute), time.Now().Add(2*time.Hour+time.Minute), "chosen, deferred for 2h")
			wantDue(t, d.store, "orders", later[:1], start.Add(6*time.Hour-time.Minute), time.Now().Add(6*time.Hour+time.Minute), "chosen, due in 6h")

			act(t, br, "/action/defer?topic=orders&state=READY&until=now", "would be pollable at once")
			wantDue(t, d.store, "orders", append(now, later...), time.Time{}, time.Time{}, "until now")
		})
	}
}

// TestDeferNeverBringsATaskSooner does the same with taskctl defer: a
// range and named tasks keep a later due time, and the command says how
// many it left.
func TestDeferNeverBringsATaskSooner(t *testing.T) {
	db := sqliteURL(t)
	s := openStoreOf(t, db)
	now, later := pushLater(t, s, "orders", 2, 2)
	start := time.Now()
	out := must(t, db, "defer", "-t", "orders", "--from", fmt.Sprint(now[0].Sequence), "--to", fmt.Sprint(later[1].Sequence), "--for", "1h")
	if !strings.Contains(out, "deferred 2 tasks of orders") || !strings.Contains(out, "left 2 tasks of orders as they were") {
		t.Errorf("taskctl defer of a range for 1h printed %q, want 2 deferred and 2 left", out)
	}
	wantDue(t, s, "orders", later, start.Add(6*time.Hour-time.Minute), time.Now().Add(6*time.Hour+time.Minute), "taskctl defer --for 1h")
	out = must(t, db, "defer", "-t", "orders", "--sequence", fmt.Sprint(later[0].Sequence), "--for", "2h")
	if !strings.Contains(out, "deferred 0 tasks") || !strings.Contains(out, "left 1 tasks of orders as they were") {
		t.Errorf("taskctl defer of a task due in 6h for 2h printed %q", out)
	}
	wantDue(t, s, "orders", later[:1], start.Add(6*time.Hour-time.Minute), time.Now().Add(6*time.Hour+time.Minute), "named, --for 2h")
}

// TestServeDeferCountsWithinItsBudget defers a range whose READY tasks the
// confirmation cannot read within its count's budget (a nanosecond here):
// it says that tasks due later are left, and that the result says how
// many, which it does.
func TestServeDeferCountsWithinItsBudget(t *testing.T) {
	t.Parallel()
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond, CountBudget: time.Nanosecond})
	pushLater(t, d.store, "orders", 2, 2)
	done := act(t, newBrowser(t, d.url), "/action/defer?topic=orders&state=READY&for=1h", "(the result says how many)")
	if !strings.Contains(done, "2 tasks due later than that already were left as they are") {
		t.Errorf("the result of a deferral whose confirmation could not count does not say how many were left:\n%s", done)
	}
}
