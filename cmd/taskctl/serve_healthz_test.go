package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

// healthz is the body of /healthz as a probe reads it.
type healthz struct {
	Status, Database, Migrations string
	Schema                       int64 `json:"schema_version"`
	Latest                       int64 `json:"latest_version"`
}

// TestServeHealthz runs taskctl serve with a token and --host on a
// PostgreSQL server of the test's own: /healthz answers without a session
// and under any Host, 200 with the schema current while the database
// answers, 503 saying the database does not answer while the server is
// stopped and 200 once it is back, 503 saying the schema is behind once a
// migration is rolled back, and it names no topic. A report is read at
// most once a second, so the changes show within a while.
func TestServeHealthz(t *testing.T) {
	c := testdb.OwnPostgres(t)
	url := c.URL()
	must(t, url, "topic", "init", "orders-of-acme")
	base := startServe(t, url, []string{serveTokenEnv + "=0123456789abcdef-token"}, "--host", "dash.example", "--read-timeout", "1s")
	probe := newBrowser(t, base)
	read := func(host string) (int, healthz) {
		t.Helper()
		r := probe.asHost(host, http.MethodGet, "/healthz", nil)
		var h healthz
		if err := json.Unmarshal([]byte(r.body), &h); err != nil {
			t.Fatalf("/healthz as %s: %d, body %q: %v", host, r.status, r.body, err)
		}
		if strings.Contains(r.body, "orders-of-acme") || r.header.Get("Set-Cookie") != "" {
			t.Errorf("/healthz as %s named a topic or gave a session: %q", host, r.body)
		}
		return r.status, h
	}
	eventually := func(what string, ok func(int, healthz) bool) {
		t.Helper()
		waitFor(t, "/healthz says "+what, func() bool { return ok(read("127.0.0.1")) })
	}
	for _, host := range []string{"127.0.0.1", "dash.example", "10.1.2.3:8080"} {
		status, h := read(host)
		if status != http.StatusOK || h.Status != "ok" || h.Database != "answers" || h.Migrations != "current" || h.Schema == 0 || h.Schema != h.Latest {
			t.Errorf("/healthz as %s: %d %+v, want 200, ok, the database answering and the schema current", host, status, h)
		}
	}

	if err := c.Stop(testdb.StopFast); err != nil {
		t.Fatal(err)
	}
	eventually("that the database does not answer", func(status int, h healthz) bool {
		return status == http.StatusServiceUnavailable && h.Status == "failing" && h.Database == "does not answer"
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually("ok once the database is back", func(status int, h healthz) bool { return status == http.StatusOK && h.Status == "ok" })

	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A report is served again for a second (healthFresh): the reading
	// after that sees the change.
	eventually("that the schema is behind by one", func(status int, h healthz) bool {
		return status == http.StatusServiceUnavailable && h.Status == "failing" && h.Database == "answers" &&
			strings.HasPrefix(h.Migrations, "behind") && h.Schema == h.Latest-1
	})
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually("ok with the schema current again", func(status int, h healthz) bool {
		return status == http.StatusOK && h.Migrations == "current"
	})
}
