package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The hostile names of the dashboard's tests: HTML and script, quotes,
// Unicode, and the longest identifier (500 bytes).
var (
	hostileTopic      = `<script>alert("topic")</script> 'q' & "dq" ✓`
	hostileIdentifier = `<img src=x onerror=alert(1)>"'` + strings.Repeat("é", 235)
	hostileInput      = `{"note":"</pre><script>alert('input')</script>","amp":"&amp;"}`
)

// seedDashboard registers topic and pushes twenty tasks through s, the
// first with hostile strings; the first ten are then FAILED, the others
// stay READY.
func seedDashboard(t testing.TB, s store, topic string) []taskapi.Task {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Initialize(ctx, topic); err != nil {
		t.Fatal(err)
	}
	creations := []taskapi.Creation{{Identifier: hostileIdentifier, Input: hostileInput, Reference: `ref "<b>bold</b>"`}}
	for i := range 19 {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("order-%02d", i), Input: fmt.Sprintf(`{"n":%d}`, i)})
	}
	tasks, err := s.Push(ctx, topic, taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	failTasks(t, s, topic, 10)
	return tasks
}

// failTasks makes the first n READY tasks of topic FAILED: an owner of the
// test's own, test-consumer, polls and fails them, as a consumer would.
func failTasks(t testing.TB, s store, topic string, n int) {
	t.Helper()
	consumeOn(t, s, "test-consumer", topic, n, true)
}

// consumeOn registers owner on the database of s and polls n tasks of
// topic with it, failing them when complete is set, holding them ACTIVE
// otherwise.
func consumeOn(t testing.TB, s store, owner, topic string, n int, complete bool) {
	t.Helper()
	consumeHeld(t, s, owner, topic, n, complete, 0)
}

// consumeHeld is consumeOn in a transaction that commits hold after its
// statements, as a consumer's does when it writes more of its own.
func consumeHeld(t testing.TB, s store, owner, topic string, n int, complete bool, hold time.Duration) {
	t.Helper()
	var err error
	switch b := s.(type) {
	case *backend[taskpg.DB]:
		err = consume(t.Context(), b, owner, topic, n, complete, hold)
	case *backend[taskansi.DB]:
		err = consume(t.Context(), b, owner, topic, n, complete, hold)
	default:
		t.Fatalf("no consumer for %T", s)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// consume registers owner on b, polls n tasks of topic and fails them
// when complete is set, in one transaction that commits hold after.
func consume[Tx any](ctx context.Context, b *backend[Tx], owner, topic string, n int, complete bool, hold time.Duration) error {
	repo, err := b.newRepo(owner)
	if err != nil {
		return err
	}
	if _, err := repo.Register(ctx, b.db); err != nil {
		return err
	}
	return b.transact(ctx, func(tx Tx) error {
		tasks, err := repo.Poll(ctx, tx, topic, n)
		if err != nil || !complete {
			return err
		}
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: "card declined"}}
		}
		if err := repo.Complete(ctx, tx, topic, completions...); err != nil {
			return err
		}
		time.Sleep(hold)
		return nil
	})
}

// wantEscaped fails t unless page shows every hostile string as text:
// escaped, never as markup.
func wantEscaped(t testing.TB, what, page string) {
	t.Helper()
	for _, raw := range []string{`<script>alert`, `<img src=x`, `</pre><script>`, `<b>bold</b>`} {
		if strings.Contains(page, raw) {
			t.Errorf("%s holds %q unescaped", what, raw)
		}
	}
}

// wantHeaders fails t unless r carries the security headers.
func wantHeaders(t testing.TB, what string, r reply) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
	}
	for name, value := range want {
		if got := r.header.Get(name); got != value {
			t.Errorf("%s: %s = %q, want %q", what, name, got, value)
		}
	}
}

// TestServePages reads every page on SQLite and PostgreSQL with hostile
// strings in the data: each answers 200 with the security headers and
// shows the strings as text; bad input answers 4xx and changes nothing.
func TestServePages(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			tasks := seedDashboard(t, d.store, hostileTopic)
			br := newBrowser(t, d.url)
			topic := url.QueryEscape(hostileTopic)
			waitFor(t, "the overview lists the topic", func() bool { return strings.Contains(br.page("/"), "&lt;script&gt;alert(&#34;topic&#34;)") })
			pages := map[string][]string{
				"/":                     {"Topics", "FAILED"},
				"/live":                 {"Completed per minute"},
				"/topic?topic=" + topic: {"order-00", "READY"},
				"/topic?topic=" + topic + "&state=FAILED":                      {"order-08", "FAILED"},
				"/topic?topic=" + topic + "&limit=5":                           {"order-18", "order-14"},
				"/topic?topic=" + topic + "&last=1&limit=5":                    {"order-00", "order-03"},
				"/topic?topic=" + topic + "&order=oldest&last=1&limit=5":       {"order-18", "order-14"},
				"/topic?topic=" + topic + "&since=1h":                          {"order-00"},
				fmt.Sprintf("/task?topic=%s&seq=%d", topic, tasks[0].Sequence): {"&lt;/pre&gt;&lt;script&gt;alert(&#39;input&#39;)", "é"},
				"/owners":            {"test-consumer"},
				"/results":           {"FAILURE"},
				"/results?since=48h": {"FAILURE", "Counted in the database"},
				"/static/style.css":  {"--bg"},
			}
			for path, wants := range pages {
				br.settled(path)
				r := br.get(path)
				if r.status != http.StatusOK {
					t.Errorf("GET %s: %d\n%s", path, r.status, r.body)
					continue
				}
				wantHeaders(t, path, r)
				wantEscaped(t, path, r.body)
				for _, want := range wants {
					if !strings.Contains(r.body, want) {
						t.Errorf("GET %s lacks %q", path, want)
					}
				}
			}
			if strings.Contains(br.page("/topic?topic="+topic+"&state=FAILED"), "order-09") {
				t.Errorf("the FAILED filter shows a READY task")
			}
			wantBadInput(t, br, d.store, hostileTopic, tasks)
		})
	}
}

// wantBadInput requests pages and confirmations with bad values: each
// answers with its 4xx status and a message, and the tasks stay as they
// were.
func wantBadInput(t *testing.T, br *browser, s store, name string, tasks []taskapi.Task) {
	before := tasksOf(t, s, name)
	topic := url.QueryEscape(name)
	bad := map[string]int{
		"/topic":                                                                   400,
		"/topic?topic=nowhere":                                                     404,
		"/topic?topic=" + topic + "&state=HAPPY":                                   400,
		"/topic?topic=" + topic + "&after=-3":                                      400,
		"/topic?topic=" + topic + "&after=x":                                       400,
		"/topic?topic=" + topic + "&after=3&before=9":                              400,
		"/topic?topic=" + topic + "&since=yesterday":                               400,
		"/topic?topic=" + topic + "&since=1h&until=2h":                             400,
		"/topic?topic=" + topic + "&limit=0":                                       400,
		"/topic?topic=" + topic + "&order=sideways":                                400,
		"/task?topic=" + topic + "&seq=99999999":                                   404,
		"/task?topic=" + topic + "&seq=abc":                                        400,
		"/task?topic=" + topic:                                                     400,
		"/results?since=soon":                                                      400,
		"/nowhere":                                                                 404,
		"/action/revive?topic=" + topic + "&state=READY":                           400,
		"/action/revive?topic=" + topic + "&how=twice&state=FAILED":                400,
		"/action/revive?topic=" + topic + "&seq=" + fmt.Sprint(tasks[19].Sequence): 409,
		"/action/defer?topic=" + topic + "&for=soon":                               400,
		"/action/purge?topic=" + topic + "&before=never":                           400,
		"/action/purge?topic=" + topic + "&from=9&to=3":                            400,
		"/action/activation?topic=" + topic + "&to=SLEEPING":                       400,
		"/action/reassign?topic=" + topic + "&state=FAILED&result=MAYBE":           400,
		"/action/expire?after=-1s":                                                 400,
	}
	for path, status := range bad {
		r := br.get(path)
		if r.status != status || !strings.Contains(r.body, `class="problem"`) {
			t.Errorf("GET %s: %d, want %d with a message\n%s", path, r.status, status, r.body)
		}
		wantHeaders(t, path, r)
	}
	if after := tasksOf(t, s, name); !reflect.DeepEqual(after, before) {
		t.Errorf("bad input changed the tasks:\n%v\nwere\n%v", after, before)
	}
}

// tasksOf reads every task of topic (up to 10,000) from the database.
func tasksOf(t testing.TB, s store, topic string) []taskapi.Info {
	t.Helper()
	infos, err := s.Page(t.Context(), topic, taskapi.Listing{}, taskapi.Inception, 10_000, taskapi.Forward)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// waitFor polls cond until it holds, or fails t after a while.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
