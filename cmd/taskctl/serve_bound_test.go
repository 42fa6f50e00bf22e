package main

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// boundCase is one action whose confirmation is raced: the confirmation
// is read (path, saying confirm), then race changes the topic, then the
// confirmation's form is posted; the result page must say done, and check
// looks at the database.
type boundCase struct {
	path    func(tasks []taskapi.Task) string
	confirm string
	race    func(t *testing.T, s store, tasks []taskapi.Task)
	done    []string
	check   func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info)
}

// finishAndPush is what consumers and producers do between a confirmation
// and its POST: the first three READY tasks are polled and FAILED (old
// sequences, completed after the confirmation), and two new tasks are
// pushed (higher sequences).
func finishAndPush(t *testing.T, s store, _ []taskapi.Task) {
	failTasks(t, s, "orders", 3)
	pushNew(t, s, 2)
}

// pushNew pushes n new READY tasks to orders.
func pushNew(t *testing.T, s store, n int) {
	t.Helper()
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("late-%d", i)}
	}
	if _, err := s.Push(t.Context(), "orders", taskapi.Append, creations); err != nil {
		t.Fatal(err)
	}
}

// reassignNow sets task to the state of result, as another operator would.
func reassignNow(t *testing.T, s store, task taskapi.Task, result taskapi.Result) {
	t.Helper()
	if err := s.Reassign(t.Context(), "orders", []taskapi.Assignment{{Task: task, Result: result}}); err != nil {
		t.Fatal(err)
	}
}

// wantAfterRace fails t unless every task of orders is in the state want
// gives for its sequence, or else in the state it was in before.
func wantAfterRace(t *testing.T, s store, before map[int64]taskapi.Info, want map[int64]taskapi.State) {
	t.Helper()
	for _, info := range tasksOf(t, s, "orders") {
		w, ok := want[info.Sequence]
		if !ok {
			w = before[info.Sequence].State
		}
		if info.State != w {
			t.Errorf("task %d (%s) is %s, want %s", info.Sequence, info.Identifier, info.State, w)
		}
	}
}

// span returns the sequences of tasks[from:to] mapped to state.
func span(tasks []taskapi.Task, from, to int, state taskapi.State) map[int64]taskapi.State {
	m := map[int64]taskapi.State{}
	for _, task := range tasks[from:to] {
		m[task.Sequence] = state
	}
	return m
}

// boundCases are the raced actions, on the topic orders of seedDashboard:
// tasks 0 to 9 FAILED, 10 to 19 READY.
func boundCases() map[string]boundCase {
	seqs := func(tasks []taskapi.Task, idx ...int) string {
		v := url.Values{"topic": {"orders"}}
		for _, i := range idx {
			v.Add("seq", fmt.Sprint(tasks[i].Sequence))
		}
		return v.Encode()
	}
	return map[string]boundCase{
		"ReviveByState": {
			path:    func([]taskapi.Task) string { return "/action/revive?topic=orders&state=FAILED" },
			confirm: "10 tasks would be made READY", race: finishAndPush, done: []string{"revived 10 tasks"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				wantAfterRace(t, s, before, span(tasks, 0, 10, taskapi.Ready))
			},
		},
		"ReviveChosen": {
			path:    func(tasks []taskapi.Task) string { return "/action/revive?" + seqs(tasks, 0, 1) },
			confirm: "2 tasks would be made READY",
			race: func(t *testing.T, s store, tasks []taskapi.Task) {
				reassignNow(t, s, tasks[0], taskapi.Success)
			},
			done: []string{"revived 1 task ", "skipped", "SUCCEEDED"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				wantAfterRace(t, s, before, map[int64]taskapi.State{tasks[1].Sequence: taskapi.Ready})
			},
		},
		"ReassignByState": {
			path:    func([]taskapi.Task) string { return "/action/reassign?topic=orders&state=FAILED&result=SUCCESS" },
			confirm: "10 tasks would be set to SUCCEEDED", race: finishAndPush, done: []string{"set 10 tasks"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				wantAfterRace(t, s, before, span(tasks, 0, 10, taskapi.Succeeded))
			},
		},
		"ReassignChosen": {
			path:    func(tasks []taskapi.Task) string { return "/action/reassign?result=SUCCESS&" + seqs(tasks, 0, 1) },
			confirm: "2 tasks would be set to SUCCEEDED",
			race: func(t *testing.T, s store, tasks []taskapi.Task) {
				reassignNow(t, s, tasks[0], taskapi.Filter)
			},
			done: []string{"set 1 task ", "skipped", "FILTERED"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				wantAfterRace(t, s, before, map[int64]taskapi.State{tasks[1].Sequence: taskapi.Succeeded})
			},
		},
		"Defer": {
			path:    func([]taskapi.Task) string { return "/action/defer?topic=orders&for=2h" },
			confirm: "10 tasks would be not polled before",
			race:    func(t *testing.T, s store, _ []taskapi.Task) { pushNew(t, s, 2) },
			done:    []string{"10 tasks of"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				deferred := map[int64]bool{}
				for _, task := range tasks[10:20] {
					deferred[task.Sequence] = true
				}
				for _, info := range tasksOf(t, s, "orders") {
					if got := !info.NotBefore.IsZero(); got != deferred[info.Sequence] {
						t.Errorf("task %d (%s): deferred %v, want %v", info.Sequence, info.Identifier, got, deferred[info.Sequence])
					}
				}
			},
		},
		"Purge": {
			path:    func([]taskapi.Task) string { return "/action/purge?topic=orders&state=FAILED" },
			confirm: "10 tasks would be deleted", race: finishAndPush, done: []string{"deleted 10 tasks"},
			check: func(t *testing.T, s store, tasks []taskapi.Task, before map[int64]taskapi.Info) {
				gone := span(tasks, 0, 10, taskapi.Failed)
				after := tasksOf(t, s, "orders")
				for _, info := range after {
					if _, ok := gone[info.Sequence]; ok {
						t.Errorf("task %d was confirmed for the purge and is still there", info.Sequence)
					}
				}
				if len(after) != len(before)-10 {
					t.Errorf("%d tasks left, want %d", len(after), len(before)-10)
				}
			},
		},
		"Activation": {
			path:    func([]taskapi.Task) string { return "/action/activation?topic=orders&to=PAUSED" },
			confirm: "RUNNING → PAUSED",
			race: func(t *testing.T, s store, _ []taskapi.Task) {
				if err := s.SetActivation(t.Context(), "orders", taskapi.Draining); err != nil {
					t.Fatal(err)
				}
			},
			done: []string{"skipped", "DRAINING"},
			check: func(t *testing.T, s store, _ []taskapi.Task, _ map[int64]taskapi.Info) {
				if a, _ := s.Activations(t.Context()); a["orders"] != taskapi.Draining {
					t.Errorf("orders is %s, want DRAINING as it was set after the confirmation", a["orders"])
				}
			},
		},
	}
}

// TestServeActionsBound reads each action's confirmation, changes the
// topic (new tasks pushed, tasks finished, tasks changed by someone else),
// then posts the confirmation's form: exactly the tasks the confirmation
// counted change, and the result page says as many as it did.
func TestServeActionsBound(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for name, c := range boundCases() {
				t.Run(name, func(t *testing.T) {
					d := startDashboard(t, b.url(t), web.Config{Refresh: time.Hour, CountBudget: time.Minute})
					tasks := seedDashboard(t, d.store, "orders")
					br := newBrowser(t, d.url)
					confirm := br.page(c.path(tasks))
					if !strings.Contains(confirm, c.confirm) {
						t.Fatalf("the confirmation does not say %q:\n%s", c.confirm, confirm)
					}
					c.race(t, d.store, tasks)
					before := map[int64]taskapi.Info{}
					for _, info := range tasksOf(t, d.store, "orders") {
						before[info.Sequence] = info
					}
					action, _, _ := strings.Cut(c.path(tasks), "?")
					r := br.post(action, confirmForm(t, confirm))
					if r.status != http.StatusOK {
						t.Fatalf("POST %s: %d\n%s", action, r.status, r.body)
					}
					for _, want := range c.done {
						if !strings.Contains(r.body, want) {
							t.Errorf("the result page does not say %q:\n%s", want, r.body)
						}
					}
					c.check(t, d.store, tasks, before)
				})
			}
		})
	}
}

// TestServeExpireBound confirms the expiry of a silent owner's tasks, then
// lets another owner fall silent: the POST expires what the confirmation
// named, not the tasks of the owner that went silent since.
func TestServeExpireBound(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: time.Hour, Expiry: time.Second})
			seedDashboard(t, d.store, "orders")
			br := newBrowser(t, d.url)
			consumeOn(t, d.store, "silent-early", "orders", 2, false)
			time.Sleep(1500 * time.Millisecond) // longer than the expiry
			confirm := br.page("/action/expire")
			if !strings.Contains(confirm, "2 tasks of 1 owners") {
				t.Fatalf("the confirmation does not name the silent owner's 2 tasks:\n%s", confirm)
			}
			consumeOn(t, d.store, "silent-late", "orders", 3, false)
			time.Sleep(1500 * time.Millisecond) // the late owner is silent too now
			r := br.post("/action/expire", confirmForm(t, confirm))
			if r.status != http.StatusOK || !strings.Contains(r.body, "marked 2 tasks EXPIRED") {
				t.Fatalf("POST /action/expire: %d, want 200 saying 2 tasks:\n%s", r.status, r.body)
			}
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Failed: 10, taskapi.Ready: 5, taskapi.Expired: 2, taskapi.Active: 3})
		})
	}
}

// TestServeActivationUnchanged asks to set a RUNNING topic RUNNING: the
// confirmation says that nothing would change and offers no Confirm.
func TestServeActivationUnchanged(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: time.Hour})
	seedDashboard(t, d.store, "orders")
	page := newBrowser(t, d.url).page("/action/activation?topic=orders&to=RUNNING")
	if !strings.Contains(page, "Nothing would change") || strings.Contains(page, `id="confirm"`) {
		t.Errorf("RUNNING → RUNNING offers to confirm, or does not say that nothing would change:\n%s", page)
	}
}

// TestServeReassignedShowsNewState reassigns two chosen FAILED tasks to
// SUCCESS: the result page lists them as SUCCEEDED, read back after the
// change, not as they were.
func TestServeReassignedShowsNewState(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: time.Hour})
	tasks := seedDashboard(t, d.store, "orders")
	v := url.Values{"topic": {"orders"}, "result": {"SUCCESS"}, "seq": {fmt.Sprint(tasks[5].Sequence), fmt.Sprint(tasks[6].Sequence)}}
	done := act(t, newBrowser(t, d.url), "/action/reassign?"+v.Encode(), "2 tasks would be set to SUCCEEDED")
	if strings.Count(done, ">SUCCEEDED</span>") != 2 || strings.Contains(done, ">FAILED</span>") {
		t.Errorf("the result page does not list the 2 tasks as SUCCEEDED:\n%s", done)
	}
}

// TestServeActionsWithoutBound posts confirmations whose bound was taken
// out of the form: each is refused with 400, saying to open the
// confirmation again, and changes nothing.
func TestServeActionsWithoutBound(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: time.Hour})
	tasks := seedDashboard(t, d.store, "orders")
	consumeOn(t, d.store, "silent-consumer", "orders", 1, false) // for the expiry
	br := newBrowser(t, d.url)
	before := tasksOf(t, d.store, "orders")
	for path, field := range map[string]string{
		"/action/revive?topic=orders&state=FAILED":                         "bound",
		"/action/purge?topic=orders&state=FAILED":                          "at",
		"/action/revive?topic=orders&seq=" + fmt.Sprint(tasks[0].Sequence): "was",
		"/action/activation?topic=orders&to=PAUSED":                        "from",
		"/action/expire?after=0s":                                          "at",
	} {
		values := confirmForm(t, br.page(path))
		values.Del(field)
		action, _, _ := strings.Cut(path, "?")
		if r := br.post(action, values); r.status != http.StatusBadRequest || !strings.Contains(r.body, "open the confirmation again") {
			t.Errorf("POST %s without %s: %d, want 400 saying to open the confirmation again:\n%s", action, field, r.status, r.body)
		}
	}
	if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Running {
		t.Errorf("refused actions changed the activation: %v", a)
	}
	if after := tasksOf(t, d.store, "orders"); !reflect.DeepEqual(after, before) {
		t.Errorf("refused actions changed the tasks")
	}
}
