package main

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// act opens the confirmation of an action (a GET that changes nothing),
// checks that it says want, then confirms it with the values of its form
// and returns the result page.
func act(t *testing.T, br *browser, path, want string) string {
	t.Helper()
	confirm := br.page(path)
	if !strings.Contains(confirm, want) {
		t.Fatalf("the confirmation of %s does not say %q:\n%s", path, want, confirm)
	}
	action, _, _ := strings.Cut(path, "?")
	r := br.post(action, confirmForm(t, confirm))
	if r.status != http.StatusOK {
		t.Fatalf("POST %s: %d\n%s", action, r.status, r.body)
	}
	return r.body
}

// stateCounts counts the tasks of topic per state in the database.
func stateCounts(t testing.TB, s store, topic string) map[taskapi.State]int64 {
	t.Helper()
	counts := map[taskapi.State]int64{}
	for _, info := range tasksOf(t, s, topic) {
		counts[info.State]++
	}
	return counts
}

// TestServeActions runs every action through its confirmation on SQLite
// and PostgreSQL and checks the database afterwards; a confirmation
// changes nothing, and a POST without the CSRF value, from another site,
// or as a GET changes nothing either.
func TestServeActions(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond, Expiry: time.Second})
			tasks := seedDashboard(t, d.store, "orders")
			br := newBrowser(t, d.url)
			wantRefused(t, br, d.store, tasks)

			act(t, br, "/action/activation?topic=orders&to=PAUSED", "RUNNING → PAUSED")
			if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Paused {
				t.Errorf("after pause, activations are %v", a)
			}
			done := act(t, br, "/action/revive?topic=orders&state=FAILED&to="+fmt.Sprint(tasks[4].Sequence), "5 tasks would be made READY")
			if !strings.Contains(done, "revived 5 tasks") {
				t.Errorf("the result of revive does not say how many:\n%s", done)
			}
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 15, taskapi.Failed: 5})

			seqs := url.Values{"topic": {"orders"}, "seq": {fmt.Sprint(tasks[5].Sequence), fmt.Sprint(tasks[6].Sequence)}}
			choose := br.page("/action/reassign?" + seqs.Encode())
			if !strings.Contains(choose, `name="result"`) {
				t.Fatalf("reassign without a result does not ask for one:\n%s", choose)
			}
			seqs.Set("result", "SUCCESS")
			act(t, br, "/action/reassign?"+seqs.Encode(), "2 tasks would be set to SUCCEEDED")
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 15, taskapi.Failed: 3, taskapi.Succeeded: 2})

			act(t, br, "/action/defer?topic=orders&for=2h&seq="+fmt.Sprint(tasks[19].Sequence), "1 task would be not polled before")
			if info, _, _ := d.store.Lookup(t.Context(), "orders", tasks[19].Sequence); time.Until(info.NotBefore) < time.Hour {
				t.Errorf("the deferred task is due at %v, want in two hours", info.NotBefore)
			}
			act(t, br, "/action/purge?topic=orders&state=FAILED,SUCCEEDED", "5 tasks would be deleted for good")
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 15})

			consumeOn(t, d.store, "silent-consumer", "orders", 2, false)
			time.Sleep(1500 * time.Millisecond) // longer than the expiry
			wantOwner(t, br.page("/owners"), "silent-consumer", "FENCED")
			act(t, br, "/action/expire", "2 tasks of 1 owners silent for longer than 1s would become EXPIRED")
			wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 13, taskapi.Expired: 2})
		})
	}
}

// TestServeCapacity sets and removes a topic's capacity through the
// dashboard on SQLite and PostgreSQL, where the repository has
// capacities: the confirmation asks for the capacity and says what would
// change, the overview and the topic page show it, each change is
// audited, bad values are refused, and a POST without the CSRF value, or
// after someone else changed the capacity since the confirmation, changes
// nothing.
func TestServeCapacity(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			d := startDashboard(t, db, web.Config{Refresh: 100 * time.Millisecond})
			seedDashboard(t, d.store, "orders") // 10 READY tasks
			br := newBrowser(t, d.url)
			if page := br.page("/topic?topic=orders"); !strings.Contains(page, `href="/action/capacity?topic=orders"`) || !strings.Contains(page, "<dt>Capacity</dt><dd>-</dd>") {
				t.Errorf("the topic page offers no capacity action, or shows a capacity:\n%s", page)
			}
			if choose := br.page("/action/capacity?topic=orders"); !strings.Contains(choose, `name="capacity"`) {
				t.Errorf("the capacity action without a capacity does not ask for one:\n%s", choose)
			}
			done := act(t, br, "/action/capacity?topic=orders&capacity=1000", "no capacity → a capacity of 1,000 READY tasks")
			if !strings.Contains(done, "had no capacity and has a capacity of 1,000 READY tasks") {
				t.Errorf("the result page does not say what changed:\n%s", done)
			}
			wantCapacities(t, d.store, map[string]int64{"orders": 1000})
			n := wantAudited(t, d.store, 0, "local", "dashboard", "capacity", 1, `"topic":["orders"]`, `"capacity":["1000"]`)
			waitFor(t, "the overview and the topic page show the capacity", func() bool {
				return strings.Contains(br.page("/"), `<td class="num">1,000</td>`) &&
					strings.Contains(br.page("/topic?topic=orders"), "<dt>Capacity</dt><dd>1,000</dd>")
			})
			if page := br.page("/action/capacity?topic=orders&capacity=1000"); !strings.Contains(page, "Nothing would change") || strings.Contains(page, `id="confirm"`) {
				t.Errorf("setting the capacity the topic has offers to confirm:\n%s", page)
			}
			wantCapacityRefused(t, br, d.store)
			act(t, br, "/action/capacity?topic=orders&capacity=5", "It holds more already")
			wantCapacities(t, d.store, map[string]int64{"orders": 5})
			n = wantAudited(t, d.store, n, "local", "dashboard", "capacity", 1, `"capacity":["5"]`)
			act(t, br, "/action/capacity?topic=orders&capacity=0", "a capacity of 5 READY tasks → no capacity")
			wantCapacities(t, d.store, map[string]int64{})
			n = wantAudited(t, d.store, n, "local", "dashboard", "capacity", 1, `"capacity":["0"]`)

			// Another operator sets the capacity between the confirmation and
			// its POST: the POST leaves it as they set it.
			confirm := br.page("/action/capacity?topic=orders&capacity=20")
			if err := d.store.SetCapacity(t.Context(), "orders", taskapi.Capacity{Ready: 30}); err != nil {
				t.Fatal(err)
			}
			if r := br.post("/action/capacity", confirmForm(t, confirm)); r.status != http.StatusOK || !strings.Contains(r.body, "skipped") {
				t.Errorf("POST after the capacity changed: %d, want 200 saying it skipped:\n%s", r.status, r.body)
			}
			wantCapacities(t, d.store, map[string]int64{"orders": 30})
			wantAudited(t, d.store, n, "local", "dashboard", "capacity", 0, `"capacity":["20"]`)
		})
	}
}

// TestServeLimits sets and removes a topic's limits through the dashboard
// on SQLite and PostgreSQL, as TestServeCapacity does its capacity: the
// confirmation asks for the limits and says what would change, a limit
// not given is kept, the overview and the topic page show them, each
// change is audited, bad values are refused, and a POST after someone
// else changed the limits since the confirmation changes nothing.
func TestServeLimits(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			seedDashboard(t, d.store, "orders")
			br := newBrowser(t, d.url)
			if page := br.page("/topic?topic=orders"); !strings.Contains(page, `href="/action/limits?topic=orders"`) || !strings.Contains(page, "<dt>Limits</dt><dd>-</dd>") {
				t.Errorf("the topic page offers no limits action, or shows limits:\n%s", page)
			}
			if choose := br.page("/action/limits?topic=orders"); !strings.Contains(choose, `name="active"`) || !strings.Contains(choose, `name="per_identifier"`) {
				t.Errorf("the limits action without limits does not ask for them:\n%s", choose)
			}
			done := act(t, br, "/action/limits?topic=orders&active=1000&per_identifier=2", "no limits → at most 1,000 ACTIVE tasks across the fleet, at most 2 per identifier")
			if !strings.Contains(done, "had no limits and has at most 1,000 ACTIVE tasks across the fleet, at most 2 per identifier") {
				t.Errorf("the result page does not say what changed:\n%s", done)
			}
			wantLimits(t, d.store, map[string]taskapi.Limits{"orders": {Active: 1000, PerIdentifier: 2}})
			n := wantAudited(t, d.store, 0, "local", "dashboard", "limits", 1, `"topic":["orders"]`, `"active":["1000"]`, `"per_identifier":["2"]`)
			waitFor(t, "the overview and the topic page show the limits", func() bool {
				return strings.Contains(br.page("/"), `<td class="num">1,000 / 2 per id</td>`) &&
					strings.Contains(br.page("/topic?topic=orders"), "<dt>Limits</dt><dd>1,000 / 2 per id</dd>")
			})
			if page := br.page("/action/limits?topic=orders&active=1000"); !strings.Contains(page, "Nothing would change") || strings.Contains(page, `id="confirm"`) {
				t.Errorf("setting the limits the topic has offers to confirm:\n%s", page)
			}
			wantLimitsRefused(t, br, d.store)
			act(t, br, "/action/limits?topic=orders&per_identifier=0", "at most 1,000 ACTIVE tasks across the fleet, at most 2 per identifier → at most 1,000 ACTIVE tasks across the fleet")
			wantLimits(t, d.store, map[string]taskapi.Limits{"orders": {Active: 1000}})
			n = wantAudited(t, d.store, n, "local", "dashboard", "limits", 1, `"active":["1000"]`, `"per_identifier":["0"]`)

			// Another operator sets the limits between the confirmation and
			// its POST: the POST leaves them as they set them.
			confirm := br.page("/action/limits?topic=orders&active=20")
			if err := d.store.SetLimits(t.Context(), "orders", taskapi.Limits{Active: 1000, PerIdentifier: 3}); err != nil {
				t.Fatal(err)
			}
			if r := br.post("/action/limits", confirmForm(t, confirm)); r.status != http.StatusOK || !strings.Contains(r.body, "skipped") {
				t.Errorf("POST after the limits changed: %d, want 200 saying it skipped:\n%s", r.status, r.body)
			}
			wantLimits(t, d.store, map[string]taskapi.Limits{"orders": {Active: 1000, PerIdentifier: 3}})
			n = wantAudited(t, d.store, n, "local", "dashboard", "limits", 0, `"active":["20"]`)
			act(t, br, "/action/limits?topic=orders&active=0&per_identifier=0", "→ no limits")
			wantLimits(t, d.store, map[string]taskapi.Limits{})
			wantAudited(t, d.store, n, "local", "dashboard", "limits", 1, `"active":["0"]`, `"per_identifier":["0"]`)
		})
	}
}

// wantLimitsRefused sends limits that must be refused: bad values, an
// unknown topic, a POST without the CSRF value or without the limits its
// confirmation showed; the limits stay 1000 and 2, and nothing is
// audited.
func wantLimitsRefused(t *testing.T, br *browser, s store) {
	t.Helper()
	before := len(auditEntries(t, s))
	for path, status := range map[string]int{
		"/action/limits?topic=orders&active=-5":          http.StatusBadRequest,
		"/action/limits?topic=orders&per_identifier=ten": http.StatusBadRequest,
		"/action/limits?topic=nope&active=5":             http.StatusNotFound,
	} {
		if r := br.get(path); r.status != status {
			t.Errorf("GET %s: %d, want %d\n%s", path, r.status, status, r.body)
		}
	}
	if r := br.post("/action/limits", url.Values{"topic": {"orders"}, "active": {"7"}, "per_identifier": {"2"}, "from": {"1000", "2"}}); r.status != http.StatusForbidden {
		t.Errorf("POST without the CSRF value: %d, want 403", r.status)
	}
	values := confirmForm(t, br.page("/action/limits?topic=orders&active=7"))
	for _, from := range [][]string{nil, {"1000"}, {"1000", "x"}} {
		values["from"] = from
		if r := br.post("/action/limits", values); r.status != http.StatusBadRequest || !strings.Contains(r.body, "open the confirmation again") {
			t.Errorf("POST with the confirmed limits %q: %d, want 400 saying to open the confirmation again:\n%s", from, r.status, r.body)
		}
	}
	wantLimits(t, s, map[string]taskapi.Limits{"orders": {Active: 1000, PerIdentifier: 2}})
	if got := len(auditEntries(t, s)); got != before {
		t.Errorf("refused limits were audited: %d entries, want %d", got, before)
	}
}

// wantLimits fails t unless the topics of s have the limits of want, and
// no other.
func wantLimits(t testing.TB, s store, want map[string]taskapi.Limits) {
	t.Helper()
	got, err := s.Limits(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("limits %v, want %v", got, want)
	}
}

// wantCapacityRefused sends capacities that must be refused: bad values,
// an unknown topic, a POST without the CSRF value or without the
// capacity its confirmation showed; the capacity stays 1000 and nothing
// is audited.
func wantCapacityRefused(t *testing.T, br *browser, s store) {
	t.Helper()
	before := len(auditEntries(t, s))
	for path, status := range map[string]int{
		"/action/capacity?topic=orders&capacity=-5":  http.StatusBadRequest,
		"/action/capacity?topic=orders&capacity=ten": http.StatusBadRequest,
		"/action/capacity?topic=nope&capacity=5":     http.StatusNotFound,
	} {
		if r := br.get(path); r.status != status {
			t.Errorf("GET %s: %d, want %d\n%s", path, r.status, status, r.body)
		}
	}
	if r := br.post("/action/capacity", url.Values{"topic": {"orders"}, "capacity": {"7"}, "from": {"1000"}}); r.status != http.StatusForbidden {
		t.Errorf("POST without the CSRF value: %d, want 403", r.status)
	}
	values := confirmForm(t, br.page("/action/capacity?topic=orders&capacity=7"))
	values.Del("from")
	if r := br.post("/action/capacity", values); r.status != http.StatusBadRequest || !strings.Contains(r.body, "open the confirmation again") {
		t.Errorf("POST without the confirmed capacity: %d, want 400 saying to open the confirmation again:\n%s", r.status, r.body)
	}
	wantCapacities(t, s, map[string]int64{"orders": 1000})
	if got := len(auditEntries(t, s)); got != before {
		t.Errorf("refused capacities were audited: %d entries, want %d", got, before)
	}
}

// wantCapacities fails t unless the topics of s have the bounds of their
// READY tasks of want, and no other.
func wantCapacities(t testing.TB, s store, want map[string]int64) {
	t.Helper()
	all, err := s.Capacities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for topic, c := range all {
		if c.Ready > 0 {
			got[topic] = c.Ready
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("capacities %v, want %v", got, want)
	}
}

// wantCounts fails t unless topic holds tasks in the states of want only.
func wantCounts(t testing.TB, s store, topic string, want map[taskapi.State]int64) {
	t.Helper()
	if got := stateCounts(t, s, topic); !maps.Equal(got, want) {
		t.Errorf("tasks of %q per state: %v, want %v", topic, got, want)
	}
}

// wantOwner fails t unless the owners page lists owner with status.
func wantOwner(t testing.TB, page, owner, status string) {
	t.Helper()
	_, row, _ := strings.Cut(page, `<td class="text">`+owner+`</td>`)
	row, _, _ = strings.Cut(row, "</tr>")
	if !strings.Contains(row, status) {
		t.Errorf("the owners page does not list %s as %s:\n%s", owner, status, page)
	}
}

// wantRefused sends actions that must be refused, and checks that the
// database did not change: no CSRF value, a wrong one, another session's,
// another site's request, a GET of a confirmation, a POST to a page.
func wantRefused(t *testing.T, br *browser, s store, tasks []taskapi.Task) {
	t.Helper()
	before := tasksOf(t, s, "orders")
	confirm := br.page("/action/activation?topic=orders&to=DRAINING") // a GET changes nothing
	values := confirmForm(t, confirm)
	other := newBrowser(t, br.base)
	foreign := confirmForm(t, other.page("/action/activation?topic=orders&to=DRAINING"))
	without := url.Values{"topic": {"orders"}, "to": {"DRAINING"}}
	wrong := url.Values{"topic": {"orders"}, "to": {"DRAINING"}, "csrf": {"forged"}}
	for what, r := range map[string]reply{
		"no CSRF value":        br.post("/action/activation", without),
		"a wrong CSRF value":   br.post("/action/activation", wrong),
		"another session's":    br.post("/action/activation", foreign),
		"another site's":       br.do(http.MethodPost, "/action/activation", values, http.Header{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}),
		"a purge without CSRF": br.post("/action/purge", url.Values{"topic": {"orders"}, "state": {"READY"}}),
	} {
		if r.status != http.StatusForbidden {
			t.Errorf("POST with %s: %d, want 403\n%s", what, r.status, r.body)
		}
	}
	if r := br.post("/topic", values); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /topic: %d, want 405", r.status)
	}
	if a, _ := s.Activations(t.Context()); a["orders"] != taskapi.Running {
		t.Errorf("refused requests changed the activation: %v", a)
	}
	if after := tasksOf(t, s, "orders"); !reflect.DeepEqual(after, before) {
		t.Errorf("refused requests changed the tasks")
	}
}

// TestServeToken serves with a token: pages send the browser to the login
// form, a wrong token is refused, the right one starts a session; a bearer
// header works for scripts; actions without a session are refused.
func TestServeToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	d := startDashboard(t, sqliteURL(t), web.Config{Token: token, Refresh: 100 * time.Millisecond})
	seedDashboard(t, d.store, "orders")
	br := newBrowser(t, d.url)
	r := br.get("/topic?topic=orders")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next=%2Ftopic%3Ftopic%3Dorders" {
		t.Fatalf("GET without a session: %d to %q, want 303 to the login", r.status, r.header.Get("Location"))
	}
	wantHeaders(t, "the login redirect", r)
	if login := br.page("/login"); strings.Contains(login, "sqlite:") || strings.Contains(login, "orders") {
		t.Errorf("the login form tells of the database:\n%s", login)
	}
	if r := br.post("/action/activation", url.Values{"topic": {"orders"}, "to": {"PAUSED"}}); r.status != http.StatusUnauthorized {
		t.Errorf("POST without a session: %d, want 401", r.status)
	}
	if r := br.post("/login", url.Values{"token": {"guess"}, "next": {"/owners"}}); r.status != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d, want 401", r.status)
	}
	if r := br.post("/login", url.Values{"token": {token}, "next": {"//evil.example/"}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Errorf("login sending elsewhere: %d to %q, want 303 to /", r.status, r.header.Get("Location"))
	}
	if page := br.page("/topic?topic=orders"); !strings.Contains(page, "Log out") {
		t.Errorf("the logged-in page offers no log out")
	}
	act(t, br, "/action/activation?topic=orders&to=PAUSED", "RUNNING → PAUSED")
	script := newBrowser(t, d.url)
	if r := script.do(http.MethodGet, "/owners", nil, http.Header{"Authorization": {"Bearer " + token}}); r.status != http.StatusOK {
		t.Errorf("GET with the bearer token: %d", r.status)
	}
	if r := script.do(http.MethodGet, "/owners", nil, http.Header{"Authorization": {"Bearer nope"}}); r.status != http.StatusUnauthorized {
		t.Errorf("GET with a wrong bearer token: %d, want 401", r.status)
	}
	if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Paused {
		t.Errorf("activations %v, want orders PAUSED", a)
	}
}

// TestServeReadOnly serves with --read-only: the pages offer no action and
// every action is refused, its confirmation too.
func TestServeReadOnly(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{ReadOnly: true, Refresh: 100 * time.Millisecond})
	tasks := seedDashboard(t, d.store, "orders")
	br := newBrowser(t, d.url)
	page := br.page("/topic?topic=orders")
	for _, offer := range []string{"/action/", "Revive…", "Pause"} {
		if strings.Contains(page, offer) {
			t.Errorf("a read-only topic page offers %q", offer)
		}
	}
	for _, path := range []string{"/action/revive?topic=orders&state=FAILED", "/action/activation?topic=orders&to=PAUSED", "/action/capacity?topic=orders&capacity=5", "/action/limits?topic=orders&active=5"} {
		if r := br.get(path); r.status != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", path, r.status)
		}
	}
	if r := br.post("/action/revive", url.Values{"topic": {"orders"}, "seq": {fmt.Sprint(tasks[0].Sequence)}}); r.status != http.StatusForbidden {
		t.Errorf("POST an action: %d, want 403", r.status)
	}
	wantCounts(t, d.store, "orders", map[taskapi.State]int64{taskapi.Ready: 10, taskapi.Failed: 10})
}

// TestServeStopsCleanly serves, reads a page, and stops: the server, its
// sampler and the store leave no goroutine behind.
func TestServeStopsCleanly(t *testing.T) {
	database := sqliteURL(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("serve", func(t *testing.T) {
		d := startDashboard(t, database, web.Config{Refresh: 100 * time.Millisecond})
		newBrowser(t, d.url).page("/")
	})
}

// TestServeCommand runs taskctl serve as a user does: it refuses to serve
// beyond the loopback address without a token, and bad flags, with exit 2.
func TestServeCommand(t *testing.T) {
	db := sqliteURL(t)
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantExit(t, db, exitUsage, "serves beyond this machine", "serve", "--listen", "0.0.0.0:0")
	wantExit(t, db, exitUsage, "serves beyond this machine", "serve", "--listen", ":0")
	wantExit(t, db, exitUsage, "give at least 16", "serve", "--listen", "0.0.0.0:0", "--token-file", short)
	wantExit(t, db, exitUsage, "--token-file", "serve", "--token-file", filepath.Join(t.TempDir(), "missing"))
	wantExit(t, db, exitUsage, "--refresh", "serve", "--refresh", "soon")
	wantExit(t, db, exitUsage, "--expiry", "serve", "--expiry", "0s")
	wantExit(t, db, exitUsage, "--listen", "serve", "--listen", "nowhere")
	wantExit(t, "sqlite:"+filepath.Join(t.TempDir(), "none.db"), exitUnreachable, "no database file", "serve")
}
