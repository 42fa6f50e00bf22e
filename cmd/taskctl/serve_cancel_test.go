package main

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// cancelOffer returns the values of the form on page that offers to
// cancel tasks, as a browser would send them with reason.
func cancelOffer(t testing.TB, page, reason string) url.Values {
	t.Helper()
	_, form, ok := strings.Cut(page, `<form class="filter cancel-offer" method="get" action="/action/cancel">`)
	if !ok {
		t.Fatalf("the page offers no cancellation:\n%s", page)
	}
	form, _, _ = strings.Cut(form, "</form>")
	values := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(form, -1) {
		values.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	values.Set("reason", reason)
	return values
}

// wantTask fails t unless the task of orders with seq is in state, with
// output when it is given.
func wantTask(t testing.TB, s store, seq int64, state taskapi.State, output string) {
	t.Helper()
	info, found, err := s.Lookup(t.Context(), "orders", seq)
	if err != nil || !found || info.State != state || output != "" && info.Output != output {
		t.Errorf("task %d: %v %q (found %v, %v); want %v with output %q", seq, info.State, info.Output, found, err, state, output)
	}
}

// TestServeCancel cancels tasks through the dashboard on SQLite and
// PostgreSQL (taskapi.Canceller): a READY task and an ACTIVE one from
// their pages, and the READY tasks of an identifier from the page of its
// tasks, each through its confirmation and audited. Each is bound to what
// its page showed: a task polled since the page showed it READY, or
// since the confirmation, is left; a task of the identifier pushed since
// the page was drawn is left. Bad requests change nothing and are not
// audited.
func TestServeCancel(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			serveCancel(t, startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond}))
		})
	}
}

// serveCancel is TestServeCancel on the dashboard d.
func serveCancel(t *testing.T, d *dashboard) {
	s := d.store
	if _, err := s.Initialize(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	var creations []taskapi.Creation
	for _, id := range []string{"running", "solo", "tenant", "tenant", "tenant", "late", "polled"} {
		creations = append(creations, taskapi.Creation{Identifier: id})
	}
	tasks, err := s.Push(t.Context(), "orders", taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	running, solo, tenant, late, polled := tasks[0].Sequence, tasks[1].Sequence, tasks[2:5], tasks[5].Sequence, tasks[6].Sequence
	consumeOn(t, s, "worker-1", "orders", 1, false) // running is ACTIVE
	br := newBrowser(t, d.url)
	n := len(auditEntries(t, s))

	// A READY task from its page, with a reason.
	page := br.page(fmt.Sprintf("/task?topic=orders&seq=%d", solo))
	values := cancelOffer(t, page, "customer left")
	if values.Get("was") != "READY" || values.Get("seq") != fmt.Sprint(solo) {
		t.Fatalf("the task page offers to cancel %v", values)
	}
	done := act(t, br, "/action/cancel?"+values.Encode(), fmt.Sprintf("Task %d of &#34;orders&#34;, READY, would be CANCELLED", solo))
	if !strings.Contains(done, "cancelled 1 task of &#34;orders&#34;") {
		t.Errorf("the result page does not say what it cancelled:\n%s", done)
	}
	wantTask(t, s, solo, taskapi.Cancelled, taskapi.CancelOutput("customer left"))
	n = wantAudited(t, s, n, "local", "dashboard", "cancel", 1, `"was":["READY"]`, `"reason":["customer left"]`, fmt.Sprintf(`"seq":["%d"]`, solo))
	if page := br.page(fmt.Sprintf("/task?topic=orders&seq=%d", solo)); strings.Contains(page, "cancel-offer") || !strings.Contains(page, "st-cancelled") {
		t.Errorf("the page of a CANCELLED task offers to cancel it, or does not show its state:\n%s", page)
	}

	// An ACTIVE task from its page: its owner is named.
	values = cancelOffer(t, br.page(fmt.Sprintf("/task?topic=orders&seq=%d", running)), "")
	if values.Get("was") != "ACTIVE" {
		t.Fatalf("the page of the ACTIVE task offers %v", values)
	}
	done = act(t, br, "/action/cancel?"+values.Encode(), "run by &#34;worker-1&#34;")
	if !strings.Contains(done, "was ACTIVE, run by &#34;worker-1&#34;") {
		t.Errorf("the result page does not name the owner:\n%s", done)
	}
	wantTask(t, s, running, taskapi.Cancelled, taskapi.CancelOutput(""))
	n = wantAudited(t, s, n, "local", "dashboard", "cancel", 1, `"was":["ACTIVE"]`)

	// The READY tasks of an identifier, from the page of its tasks: a task
	// of it pushed since the page was drawn is left.
	page = br.page("/topic?topic=orders&identifier=tenant")
	if !strings.Contains(page, "Cancel the 3 READY tasks of this identifier shown here…") {
		t.Fatalf("the identifier's page does not offer to cancel its 3 READY tasks:\n%s", page)
	}
	values = cancelOffer(t, page, "tenant gone")
	pushed, err := s.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "tenant"}})
	if err != nil {
		t.Fatal(err)
	}
	done = act(t, br, "/action/cancel?"+values.Encode(), "3 READY tasks of identifier &#34;tenant&#34; in &#34;orders&#34;, those the page showed READY, would be CANCELLED")
	if !strings.Contains(done, "cancelled 3 tasks of &#34;orders&#34;") {
		t.Errorf("the result page does not say 3 tasks:\n%s", done)
	}
	for _, task := range tenant {
		wantTask(t, s, task.Sequence, taskapi.Cancelled, taskapi.CancelOutput("tenant gone"))
	}
	wantTask(t, s, pushed[0].Sequence, taskapi.Ready, "")
	n = wantAudited(t, s, n, "local", "dashboard", "cancel", 3, `"identifier":["tenant"]`, `"was":["READY*3"]`)

	// A task shown READY and polled before the confirmation: nothing to
	// confirm. One polled after the confirmation: the POST leaves it.
	values = cancelOffer(t, br.page(fmt.Sprintf("/task?topic=orders&seq=%d", late)), "")
	confirm := br.page(fmt.Sprintf("/action/cancel?topic=orders&seq=%d&was=READY", polled))
	consumeOn(t, s, "worker-2", "orders", 2, false) // late and polled are ACTIVE
	if page := br.page("/action/cancel?" + values.Encode()); !strings.Contains(page, "is ACTIVE now, not READY as the page showed") || strings.Contains(page, `id="confirm"`) {
		t.Errorf("the confirmation of a task polled since its page offers to cancel it:\n%s", page)
	}
	if r := br.post("/action/cancel", confirmForm(t, confirm)); r.status != http.StatusOK || !strings.Contains(r.body, "skipped task") {
		t.Errorf("POST after the task was polled: %d, want 200 saying it skipped it:\n%s", r.status, r.body)
	}
	wantTask(t, s, late, taskapi.Active, "")
	wantTask(t, s, polled, taskapi.Active, "")
	n = wantAudited(t, s, n, "local", "dashboard", "cancel", 0, `"was":["READY"]`)

	// CancelIn itself leaves a task cancelled from another state than
	// confirmed: the cancellation is rolled back.
	if cancelled, err := s.CancelIn(t.Context(), "orders", "", map[int64]taskapi.State{late: taskapi.Ready, pushed[0].Sequence: taskapi.Ready}); err != nil ||
		len(cancelled) != 1 || cancelled[0].Task.Sequence != pushed[0].Sequence {
		t.Errorf("CancelIn of a READY task confirmed and an ACTIVE one confirmed READY: %+v, %v; want the READY one only", cancelled, err)
	}
	wantTask(t, s, late, taskapi.Active, "")
	wantTask(t, s, pushed[0].Sequence, taskapi.Cancelled, "")

	wantCancelRefused(t, br, s, polled, n)
	if page := br.page("/topic?topic=orders"); !strings.Contains(page, `value="CANCELLED"`) {
		t.Errorf("the topic page's filter has no CANCELLED:\n%s", page)
	}
}

// wantCancelRefused sends cancellations that must be refused; nothing
// changes and nothing is audited (n entries).
func wantCancelRefused(t *testing.T, br *browser, s store, active int64, n int) {
	t.Helper()
	failed, err := s.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	failTasks(t, s, "orders", 1)
	seq := fmt.Sprint(failed[0].Sequence)
	for path, status := range map[string]int{
		"/action/cancel?topic=orders":                                               http.StatusBadRequest,
		"/action/cancel?topic=orders&state=READY":                                   http.StatusBadRequest,
		"/action/cancel?topic=orders&seq=x":                                         http.StatusBadRequest,
		"/action/cancel?topic=nope&seq=" + seq:                                      http.StatusNotFound,
		"/action/cancel?topic=orders&seq=999999":                                    http.StatusNotFound,
		"/action/cancel?topic=orders&seq=" + seq:                                    http.StatusConflict,
		"/action/cancel?topic=orders&seq=" + seq + "&was=READY&was=READY":           http.StatusBadRequest,
		"/action/cancel?topic=orders&seq=" + seq + "&was=LATE":                      http.StatusBadRequest,
		"/action/cancel?topic=orders&seq=" + seq + "&reason=a%00b":                  http.StatusBadRequest,
		"/action/cancel?topic=orders&identifier=tenant&seq=" + seq:                  http.StatusBadRequest,
		"/action/cancel?topic=orders&identifier=&seq=" + seq:                        http.StatusBadRequest,
		fmt.Sprintf("/action/cancel?topic=orders&identifier=polled&seq=%d", active): http.StatusConflict,
	} {
		if r := br.get(path); r.status != status {
			t.Errorf("GET %s: %d, want %d\n%s", path, r.status, status, r.body)
		}
	}
	if r := br.post("/action/cancel", url.Values{"topic": {"orders"}, "seq": {fmt.Sprint(active)}, "was": {"ACTIVE"}}); r.status != http.StatusForbidden {
		t.Errorf("POST without the CSRF value: %d, want 403", r.status)
	}
	values := confirmForm(t, br.page(fmt.Sprintf("/action/cancel?topic=orders&seq=%d", active)))
	delete(values, "was")
	if r := br.post("/action/cancel", values); r.status != http.StatusBadRequest || !strings.Contains(r.body, "open the confirmation again") {
		t.Errorf("POST without the states confirmed: %d, want 400:\n%s", r.status, r.body)
	}
	wantTask(t, s, active, taskapi.Active, "")
	wantTask(t, s, failed[0].Sequence, taskapi.Failed, "")
	if got := len(auditEntries(t, s)); got != n {
		t.Errorf("refused cancellations were audited: %d entries, want %d", got, n)
	}
}

// TestServeCancelMany cancels a tenant whose tasks carry identifiers of
// their own (issue 42: Cancel took one exact identifier): from what a
// search by prefix found, READY and ACTIVE alike, and from the tasks
// selected on a topic's page. The actions name the tasks by sequence and
// state, so that a task pushed after the search, or polled after it, is
// left as it is.
func TestServeCancelMany(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			s, br := d.store, newBrowser(t, d.url)
			if _, err := s.Initialize(t.Context(), "orders"); err != nil {
				t.Fatal(err)
			}
			var creations []taskapi.Creation
			for i := range 12 {
				creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("tenant-042/%02d", i)})
			}
			creations = append(creations, taskapi.Creation{Identifier: "tenant-0420/x"}, taskapi.Creation{Identifier: "other"})
			pushed, err := s.Push(t.Context(), "orders", taskapi.Append, creations)
			if err != nil {
				t.Fatal(err)
			}
			consumeOn(t, s, "worker", "orders", 1, false) // tenant-042/00 ACTIVE

			page := br.page("/search?topic=orders&identifier=tenant-042/")
			cancel := buttonLinks(t, page, `every task found</th></tr></thead>`, "cancel")
			if len(cancel) != 1 || !strings.Contains(page, "Cancel 12 READY, ACTIVE or SUSPENDED…") {
				t.Fatalf("no cancellation of the 12 tasks found:\n%s", page)
			}
			late, err := s.Push(t.Context(), "orders", taskapi.Append, []taskapi.Creation{{Identifier: "tenant-042/late"}})
			if err != nil {
				t.Fatal(err)
			}
			consumeOn(t, s, "worker-2", "orders", 1, false) // tenant-042/01, found READY, polled since
			done := act(t, br, cancel[0], "tenant-042/11")
			if !strings.Contains(done, "cancelled 11 tasks") {
				t.Errorf("the cancellation of what was found says:\n%s", done)
			}
			states := map[int64]string{pushed[0].Sequence: "CANCELLED", pushed[1].Sequence: "ACTIVE",
				pushed[12].Sequence: "READY", pushed[13].Sequence: "READY", late[0].Sequence: "READY"}
			for _, task := range pushed[2:12] {
				states[task.Sequence] = "CANCELLED"
			}
			wantTaskStates(t, s, "orders", states)

			chosen := url.Values{"topic": {"orders"}, "how": {"reset"},
				"seq": {fmt.Sprint(pushed[12].Sequence), fmt.Sprint(late[0].Sequence)}}
			done = act(t, br, "/action/cancel?"+chosen.Encode(), "tenant-042/late")
			if !strings.Contains(done, "cancelled 2 tasks") {
				t.Errorf("the cancellation of the selected tasks says:\n%s", done)
			}
			states[pushed[12].Sequence], states[late[0].Sequence] = "CANCELLED", "CANCELLED"
			wantTaskStates(t, s, "orders", states)
			if page := br.page("/topic?topic=orders"); !strings.Contains(page, `formaction="/action/cancel"`) {
				t.Errorf("the topic's page offers no cancellation of the selected tasks:\n%s", page)
			}
		})
	}
}
