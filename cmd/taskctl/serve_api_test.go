package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// apiTopic is the part of /api/topic that TestServeJSONAPI reads, as
// docs/dashboard.md's example shows it.
type apiTopic struct {
	Topic      string
	Activation string
	Tasks      []struct {
		Info struct {
			Sequence   int64
			Identifier string
			State      string
			Created    time.Time
		}
		Link string
	}
	Next string
}

// TestServeJSONAPI reads the pages' data as JSON, behind the dashboard's
// token: under /api/ and with Accept: application/json, the same data,
// enums by name; errors are JSON with the page's status; a script without
// the token is refused, not sent to the login form; actions are no part
// of it.
func TestServeJSONAPI(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-token"
	d := startDashboard(t, sqliteURL(t), web.Config{Token: token, Refresh: 100 * time.Millisecond})
	seedDashboard(t, d.store, "orders")
	script := newBrowser(t, d.url)
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	get := func(path string, header http.Header, status int) reply {
		t.Helper()
		r := script.do(http.MethodGet, path, nil, header)
		if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || !json.Valid([]byte(r.body)) {
			t.Errorf("GET %s: %d %s, want %d and JSON:\n%s", path, r.status, r.header.Get("Content-Type"), status, r.body)
		}
		return r
	}

	var topic apiTopic
	if err := json.Unmarshal([]byte(get("/api/topic?topic=orders&limit=5", bearer, http.StatusOK).body), &topic); err != nil {
		t.Fatal(err)
	}
	if topic.Topic != "orders" || topic.Activation != "RUNNING" || len(topic.Tasks) != 5 || topic.Tasks[0].Info.Identifier != "order-18" ||
		topic.Tasks[0].Info.State != "READY" || topic.Tasks[0].Info.Created.IsZero() || !strings.HasPrefix(topic.Next, "/topic?") {
		t.Errorf("/api/topic reads %+v", topic)
	}
	accept := http.Header{"Authorization": bearer["Authorization"], "Accept": {"application/json"}}
	// The same page's data either way; the sampler's figures may move in
	// between, its tasks and links do not.
	var byAccept apiTopic
	if err := json.Unmarshal([]byte(get("/topic?topic=orders&limit=5", accept, http.StatusOK).body), &byAccept); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byAccept, topic) {
		t.Errorf("Accept: application/json and /api/ differ:\n%+v\n%+v", byAccept, topic)
	}
	waitFor(t, "/api/ (the overview) lists the topic", func() bool {
		return strings.Contains(script.do(http.MethodGet, "/api/", nil, bearer).body, `"Topic": "orders"`)
	})
	if body := get("/api/", bearer, http.StatusOK).body; strings.Contains(body, "<svg") {
		t.Errorf("/api/ (the overview) holds a chart:\n%s", body)
	}
	var failed apiTopic
	if err := json.Unmarshal([]byte(get("/api/topic?topic=orders&state=FAILED", bearer, http.StatusOK).body), &failed); err != nil || len(failed.Tasks) != 10 {
		t.Errorf("/api/topic of the FAILED tasks: %d tasks, %v", len(failed.Tasks), err)
	}
	for _, task := range failed.Tasks {
		if task.Info.State != "FAILED" {
			t.Errorf("/api/topic of the FAILED tasks lists %+v", task)
		}
	}

	var e struct {
		Status int
		Error  string
	}
	if err := json.Unmarshal([]byte(get("/api/topic?topic=nowhere", bearer, http.StatusNotFound).body), &e); err != nil || e.Status != 404 || !strings.Contains(e.Error, "nowhere") {
		t.Errorf("an unknown topic: %+v %v", e, err)
	}
	get("/api/topic?topic=orders&limit=0", bearer, http.StatusBadRequest)
	get("/api/topic?topic=orders", nil, http.StatusUnauthorized)
	get("/topic?topic=orders", http.Header{"Accept": {"application/json"}}, http.StatusUnauthorized)
	get("/api/topic?topic=orders", http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized)
	get("/api/action/activation?topic=orders&to=PAUSED", bearer, http.StatusNotFound)
	get("/api/live", bearer, http.StatusNotFound)
	if r := script.do(http.MethodPost, "/api/topic?topic=orders", nil, bearer); r.status < 400 {
		t.Errorf("POST to the JSON API: %d, want a refusal", r.status)
	}
	if r := script.get("/topic?topic=orders"); r.status != http.StatusSeeOther {
		t.Errorf("a browser without a session: %d, want the login form's redirect", r.status)
	}
}
