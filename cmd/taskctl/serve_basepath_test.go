package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// ownPath finds the paths a page names in its attributes.
var ownPath = regexp.MustCompile(`(?:href|action|src|data-live)="(/[^"]*)"`)

// TestServeBasePath serves the dashboard under /ops/tasks behind a
// reverse proxy that passes the whole path on: the login's redirects, the
// session cookie, every path a page names (links, forms, the style sheet,
// the live figures), an action through its confirmation and the JSON API
// all stay under the prefix, and a path outside it is a 404.
func TestServeBasePath(t *testing.T) {
	t.Parallel()
	const token, base = "0123456789abcdef-token", "/ops/tasks"
	d := startDashboard(t, sqliteURL(t), web.Config{Token: token, BasePath: base, Refresh: 100 * time.Millisecond})
	seedDashboard(t, d.store, "orders")
	proxy := reverseProxy(t, d.url)
	br := newBrowser(t, proxy)

	r := br.get(base + "/topic?topic=orders")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), base+"/login?") {
		t.Fatalf("a page without a session: %d to %q, want the login form under %s", r.status, r.header.Get("Location"), base)
	}
	login := br.post(r.header.Get("Location"), url.Values{"token": {token}, "next": {"/topic?topic=orders"}})
	if login.status != http.StatusSeeOther || login.header.Get("Location") != base+"/topic?topic=orders" {
		t.Fatalf("the login: %d to %q, want %s/topic?topic=orders", login.status, login.header.Get("Location"), base)
	}
	if cookie := login.header.Get("Set-Cookie"); !strings.Contains(cookie, "Path="+base+"/") {
		t.Errorf("the session cookie is not scoped to the base path: %s", cookie)
	}

	for _, page := range []string{"/", "/topic?topic=orders", "/owners", "/failures", "/audit"} {
		body := br.page(base + page)
		paths := ownPath.FindAllStringSubmatch(body, -1)
		if len(paths) == 0 {
			t.Errorf("%s names no path of the dashboard", page)
		}
		for _, m := range paths {
			if !strings.HasPrefix(m[1], base+"/") {
				t.Errorf("%s names %q, outside %s", page, m[1], base)
			}
		}
	}
	if r := br.get(base + "/static/style.css"); r.status != http.StatusOK {
		t.Errorf("the style sheet under the base path: %d", r.status)
	}
	if r := br.get(base + "/live"); r.status != http.StatusOK || strings.Contains(r.body, `href="/topic`) {
		t.Errorf("the live figures under the base path: %d\n%s", r.status, r.body)
	}

	confirm := br.page(base + "/action/activation?topic=orders&to=PAUSED")
	if !strings.Contains(confirm, `<form method="post" action="`+base+`/action/activation"`) {
		t.Fatalf("the confirmation does not post under the base path:\n%s", confirm)
	}
	values := confirmForm(t, strings.Replace(confirm, `action="`+base+`/action/`, `action="/action/`, 1))
	if done := br.post(base+"/action/activation", values); done.status != http.StatusOK {
		t.Errorf("the pause under the base path: %d\n%s", done.status, done.body)
	}
	if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Paused {
		t.Errorf("after the pause under the base path: %v", a)
	}

	if r := br.do(http.MethodGet, base+"/api/topic?topic=orders", nil, http.Header{"Authorization": {"Bearer " + token}}); r.status != http.StatusOK || !strings.Contains(r.body, `"Topic": "orders"`) {
		t.Errorf("the JSON API under the base path: %d\n%s", r.status, r.body)
	}
	if r := br.get(base + "/healthz"); r.status != http.StatusOK {
		t.Errorf("/healthz under the base path: %d", r.status)
	}
	if r := br.get(base); r.status != http.StatusMovedPermanently || r.header.Get("Location") != base+"/" {
		t.Errorf("the base path without its slash: %d to %q", r.status, r.header.Get("Location"))
	}
	for _, outside := range []string{"/topic?topic=orders", "/ops/taskss/", "/healthz"} {
		if r := br.get(outside); r.status != http.StatusNotFound {
			t.Errorf("%s, outside the base path: %d, want 404", outside, r.status)
		}
	}
}

// reverseProxy serves a proxy to target, passing every path on as it
// is, until the test ends, and returns its URL.
func reverseProxy(t *testing.T, target string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(to), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// TestServeBasePathInChromium runs taskctl serve --base-path /ops/tasks
// behind a reverse proxy and works it in Chromium: the live overview
// lists the topic, its link opens the topic's page under the prefix, the
// Sequence heading turns the order, and a pause goes through its
// confirmation. A --base-path that is no plain path is bad usage.
func TestServeBasePathInChromium(t *testing.T) {
	db := sqliteURL(t)
	for _, bad := range []string{"ops/tasks", "//ops", "/ops?x=1", "/ops/../x", "/a b", `/x"y`} {
		wantExit(t, db, exitUsage, "--base-path", "serve", "--listen", "127.0.0.1:0", "--base-path", bad)
	}
	needBrowser(t)
	must(t, db, "topic", "init", "orders")
	must(t, db, "push", "-t", "orders", "order-1", "order-2", "order-3")
	proxy := reverseProxy(t, startServe(t, db, nil, "--base-path", "/ops/tasks/", "--refresh", "100ms"))
	b := newTab(t, 1280, 900)
	b.open(proxy + "/ops/tasks/")
	b.until("the live overview lists the topic", func() bool { return contains(b.texts("table.topics td.text a"), "orders") })
	b.click(`table.topics a[href="/ops/tasks/topic?topic=orders"]`)
	if h1, at := b.text("h1 .text"), b.location(); h1 != "orders" || !strings.HasPrefix(at, proxy+"/ops/tasks/topic?") {
		t.Errorf("the topic's link opened %q at %s", h1, at)
	}
	if seqs := firstSeqs(b); len(seqs) != 3 || seqs[0] != "3" {
		t.Errorf("newest first, the page lists %v", seqs)
	}
	b.click(`table.tasks thead th.num a`)
	if seqs := firstSeqs(b); len(seqs) != 3 || seqs[0] != "1" || !strings.Contains(b.location(), "/ops/tasks/topic?order=oldest") {
		t.Errorf("oldest first, the page lists %v at %s", seqs, b.location())
	}
	b.click(`p.actions a.button[href*="to=PAUSED"]`)
	if out := confirm(b, "RUNNING → PAUSED"); !strings.Contains(out, "is PAUSED") {
		t.Errorf("the pause under the base path says %q", out)
	}
	if text := must(t, db, "topic", "list"); !strings.Contains(text, "PAUSED") {
		t.Errorf("the pause under the base path did not stand:\n%s", text)
	}
}
