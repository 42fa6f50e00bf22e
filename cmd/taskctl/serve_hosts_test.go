package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// asHost sends a request to b's server as a browser would under another
// host name that resolves to it (DNS rebinding): the Host header, and the
// Origin of a POST, name host.
func (b *browser) asHost(host, method, path string, values url.Values) reply {
	b.t.Helper()
	var body io.Reader
	if values != nil {
		body = strings.NewReader(values.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Host = host
	if values != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s as %s: %v", method, path, host, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// TestServeRefusesForeignHosts serves without a token, as on 127.0.0.1 by
// default: a page under a host name that is neither a loopback one nor
// one given with --host (a rebound DNS name) gets nothing, neither a
// confirmation's CSRF value nor a session, and its POST changes nothing;
// the loopback names and the named host are served as before.
func TestServeRefusesForeignHosts(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond, Hosts: []string{"dash.example"}})
	seedDashboard(t, d.store, "orders")
	port := strings.TrimPrefix(d.url, "http://127.0.0.1:")
	legit := newBrowser(t, d.url)
	form := confirmForm(t, legit.page("/action/activation?topic=orders&to=PAUSED"))
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port,
		"localhost.evil.example", "dash.example.evil:" + port, "10.0.0.5:" + port, "[::2]:" + port} {
		attacker := newBrowser(t, d.url)
		for _, path := range []string{"/action/activation?topic=orders&to=PAUSED", "/", "/login", "/static/refresh.js"} {
			r := attacker.asHost(host, http.MethodGet, path, nil)
			if r.status != http.StatusMisdirectedRequest || !strings.Contains(r.body, "--host") {
				t.Errorf("GET %s as %s: %d, want 421 naming --host\n%s", path, host, r.status, r.body)
			}
			if strings.Contains(r.body, `name="csrf"`) || r.header.Get("Set-Cookie") != "" {
				t.Errorf("GET %s as %s gave away a CSRF value or a session", path, host)
			}
		}
		// The attack: the rebound page reads a confirmation under its own
		// name, with the session it got there, and POSTs its form. (Were
		// the page refused, it POSTs a legitimate form: its cookie does
		// not go to the foreign name, as in a browser.)
		values := form
		if r := attacker.asHost(host, http.MethodGet, "/action/activation?topic=orders&to=PAUSED", nil); strings.Contains(r.body, `name="csrf"`) {
			values = confirmForm(t, r.body)
		}
		if r := attacker.asHost(host, http.MethodPost, "/action/activation", values); r.status != http.StatusMisdirectedRequest {
			t.Errorf("POST as %s: %d, want 421\n%s", host, r.status, r.body)
		}
		if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Running {
			t.Fatalf("requests under the foreign host name %s changed the activation: %v", host, a)
		}
	}
	for _, host := range []string{"localhost:" + port, "localhost", "LocalHost:" + port, "127.0.0.1:" + port, "127.0.0.1",
		"127.5.6.7:" + port, "[::1]:" + port, "[::1]", "dash.example:" + port, "Dash.Example"} {
		if r := newBrowser(t, d.url).asHost(host, http.MethodGet, "/", nil); r.status != http.StatusOK {
			t.Errorf("GET / as %s: %d, want 200\n%s", host, r.status, r.body)
		}
	}
	local := newBrowser(t, d.url)
	form = confirmForm(t, local.asHost("localhost:"+port, http.MethodGet, "/action/activation?topic=orders&to=PAUSED", nil).body)
	if r := local.asHost("localhost:"+port, http.MethodPost, "/action/activation", form); r.status != http.StatusOK {
		t.Errorf("POST as localhost: %d, want 200\n%s", r.status, r.body)
	}
	if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Paused {
		t.Errorf("a pause under localhost left the activation at %v", a)
	}
}

// TestServeHostsWithAToken serves with a token: any Host is served (the
// token authenticates, and a rebound page cannot carry the session
// cookie), unless --host names some, and then only those and the loopback
// names are.
func TestServeHostsWithAToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	db := sqliteURL(t)
	open := startDashboard(t, db, web.Config{Token: token, Refresh: 100 * time.Millisecond})
	if r := newBrowser(t, open.url).asHost("dashboard.example.com", http.MethodGet, "/", nil); r.status != http.StatusSeeOther {
		t.Errorf("with a token and no --host, GET / as dashboard.example.com: %d, want 303 to the login", r.status)
	}
	named := startDashboard(t, db, web.Config{Token: token, Refresh: 100 * time.Millisecond, Hosts: []string{"dashboard.example.com"}})
	for host, want := range map[string]int{
		"dashboard.example.com": http.StatusSeeOther, "127.0.0.1": http.StatusSeeOther, "evil.example": http.StatusMisdirectedRequest,
	} {
		if r := newBrowser(t, named.url).asHost(host, http.MethodGet, "/", nil); r.status != want {
			t.Errorf("with a token and --host dashboard.example.com, GET / as %s: %d, want %d", host, r.status, want)
		}
	}
}

// TestServeHostFlag runs taskctl serve with --host: the name given is
// served, a foreign one is not, and a --host that is not a host name is
// bad usage.
func TestServeHostFlag(t *testing.T) {
	db := sqliteURL(t)
	for _, bad := range []string{"", "https://dash.example/", "dash.example/x", "a b", "user@dash.example", "https:dash.example"} {
		wantExit(t, db, exitUsage, "--host", "serve", "--listen", "127.0.0.1:0", "--host", bad)
	}
	base := startServe(t, db, nil, "--host", "dash.example", "--host", "other.example:8443")
	for host, want := range map[string]int{"dash.example": 200, "other.example": 200, "localhost": 200, "evil.example": 421} {
		if r := newBrowser(t, base).asHost(host, http.MethodGet, "/", nil); r.status != want {
			t.Errorf("GET / as %s: %d, want %d", host, r.status, want)
		}
	}
}
