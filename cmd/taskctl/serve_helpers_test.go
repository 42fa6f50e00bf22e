package main

import (
	"context"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// dashboard is a taskctl serve running in the test process on a
// database of its own, on a free port of 127.0.0.1.
type dashboard struct {
	url   string // http://127.0.0.1:PORT
	store store
}

// startDashboard serves database with cfg (its Store is filled in) until
// the test ends, and fails the test if the server does not stop cleanly.
func startDashboard(t testing.TB, database string, cfg web.Config) *dashboard {
	t.Helper()
	return startDashboardPool(t, database, cfg, defaultServePool)
}

// startDashboardPool is startDashboard with at most pool connections, as
// 'taskctl serve --pool' opens them.
func startDashboardPool(t testing.TB, database string, cfg web.Config, pool int) *dashboard {
	t.Helper()
	return serveApp(t, &app{database: database, stdout: io.Discard, stderr: io.Discard, limits: serveLimits(pool)}, cfg)
}

// serveApp serves the databases of a, as 'taskctl serve' opens them, with
// cfg (its stores are filled in) until the test ends, and fails the test
// if the server does not stop cleanly. The dashboard's store is the one
// its actions change.
func serveApp(t testing.TB, a *app, cfg web.Config) *dashboard {
	t.Helper()
	if err := a.openDashboard(t.Context(), &cfg); err != nil {
		a.closeStores()
		t.Fatalf("open %s: %v", a.database, err)
	}
	srv, err := web.New(cfg)
	if err != nil {
		a.closeStores()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.closeStores()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		a.closeStores()
	})
	return &dashboard{url: "http://" + ln.Addr().String(), store: cfg.Store.(store)}
}

// browser is an HTTP client with cookies, as a browser keeps them, that
// does not follow redirects (the tests look at them).
type browser struct {
	t      testing.TB
	client *http.Client
	base   string
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{
		Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// reply is a response with its body read.
type reply struct {
	status int
	header http.Header
	body   string
}

// get requests path.
func (b *browser) get(path string) reply {
	b.t.Helper()
	return b.do(http.MethodGet, path, nil, nil)
}

// post sends values to path as a form, from this server's origin.
func (b *browser) post(path string, values url.Values) reply {
	b.t.Helper()
	return b.do(http.MethodPost, path, values, http.Header{"Origin": {b.base}})
}

// do sends a request.
func (b *browser) do(method, path string, values url.Values, header http.Header) reply {
	b.t.Helper()
	var body io.Reader
	if values != nil {
		body = strings.NewReader(values.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if values != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// page requests path and fails the test unless it answers 200.
func (b *browser) page(path string) string {
	b.t.Helper()
	r := b.get(path)
	if r.status != http.StatusOK {
		b.t.Fatalf("GET %s: %d\n%s", path, r.status, r.body)
	}
	return r.body
}

// reloads reports whether page reloads itself: a results window that the
// database counts in the background.
func reloads(page string) bool { return strings.Contains(page, `http-equiv="refresh"`) }

// settled requests path until the page no longer reloads itself (its
// figures are there), and returns it; it fails the test unless it answers
// 200.
func (b *browser) settled(path string) string {
	b.t.Helper()
	var page string
	waitFor(b.t, "the figures of "+path, func() bool {
		page = b.page(path)
		return !reloads(page)
	})
	return page
}

// hiddenField matches a hidden input of a form.
var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)

// confirmForm reads the POST form of a confirmation page: its hidden
// values, the CSRF value among them.
func confirmForm(t testing.TB, page string) url.Values {
	t.Helper()
	_, formPart, ok := strings.Cut(page, `<form method="post" action="/action/`)
	if !ok {
		t.Fatalf("the page has no form to confirm:\n%s", page)
	}
	formPart, _, _ = strings.Cut(formPart, "</form>")
	values := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(formPart, -1) {
		values.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return values
}
