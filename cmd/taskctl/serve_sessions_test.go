package main

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// testToken is the token of the dashboards of the session tests.
const testToken = "0123456789abcdef-token"

// clock is a clock that a test moves by hand: the sessions' and the
// login throttle's (web.Config.Now).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advance moves the clock d on.
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sessionDashboard serves a database of its own with testToken, sessions
// of at most maxAge and idle, and c as its clock; the topic orders holds
// twenty tasks.
func sessionDashboard(t *testing.T, c *clock, maxAge, idle time.Duration) *dashboard {
	t.Helper()
	d := startDashboard(t, sqliteURL(t), web.Config{Token: testToken, Refresh: 100 * time.Millisecond,
		SessionMaxAge: maxAge, SessionIdle: idle, Now: c.Now})
	seedDashboard(t, d.store, "orders")
	return d
}

// login logs br in with the token and fails the test unless it worked.
func (b *browser) login() {
	b.t.Helper()
	if r := b.post("/login", url.Values{"token": {testToken}, "next": {"/"}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		b.t.Fatalf("login: %d to %q\n%s", r.status, r.header.Get("Location"), r.body)
	}
}

// replay returns a browser that holds the cookies b holds now, as an
// attacker who copied them would.
func (b *browser) replay() *browser {
	b.t.Helper()
	u, _ := url.Parse(b.base)
	other := newBrowser(b.t, b.base)
	other.client.Jar.SetCookies(u, b.client.Jar.Cookies(u))
	return other
}

// wantSessionRefused fails t unless br's session is refused: a page sends
// it to the login form, an action is refused with 401 and changes nothing.
func wantSessionRefused(t *testing.T, what string, br *browser, d *dashboard, pause url.Values) {
	t.Helper()
	if r := br.get("/owners"); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/login?") {
		t.Errorf("%s: GET /owners: %d to %q, want 303 to the login", what, r.status, r.header.Get("Location"))
	}
	if r := br.post("/action/activation", pause); r.status != http.StatusUnauthorized {
		t.Errorf("%s: POST a pause: %d, want 401", what, r.status)
	}
	if a, _ := d.store.Activations(t.Context()); a["orders"] != taskapi.Running {
		t.Fatalf("%s: a refused session paused orders: %v", what, a)
	}
}

// wantSessionServed fails t unless br's session reads a page.
func wantSessionServed(t *testing.T, what string, br *browser) {
	t.Helper()
	if r := br.get("/owners"); r.status != http.StatusOK {
		t.Errorf("%s: GET /owners: %d, want 200", what, r.status)
	}
}

// TestServeLogoutRevokes logs in, keeps a copy of the session cookie and
// a confirmation's form, and logs out: the copy reads no page and POSTs no
// action afterwards.
func TestServeLogoutRevokes(t *testing.T) {
	d := sessionDashboard(t, newClock(), 0, 0)
	br := newBrowser(t, d.url)
	br.login()
	pause := confirmForm(t, br.page("/action/activation?topic=orders&to=PAUSED"))
	stolen := br.replay()
	wantSessionServed(t, "the copied cookie before the logout", stolen)
	if r := br.post("/logout", url.Values{"csrf": pause["csrf"]}); r.status != http.StatusSeeOther {
		t.Fatalf("logout: %d\n%s", r.status, r.body)
	}
	wantSessionRefused(t, "the copied cookie after the logout", stolen, d, pause)
	br.login()
	wantSessionServed(t, "a new login", br)
}

// TestServeSessionsExpire moves the dashboard's clock: a session ends
// once idle for longer than its idle time (the overview's own refreshes do
// not keep it), and once older than its maximum age however busy.
func TestServeSessionsExpire(t *testing.T) {
	c := newClock()
	d := sessionDashboard(t, c, 3*time.Hour, time.Hour)
	pause := url.Values{"topic": {"orders"}, "to": {"PAUSED"}}

	idle := newBrowser(t, d.url)
	idle.login()
	pause["csrf"] = confirmForm(t, idle.page("/action/activation?topic=orders&to=PAUSED"))["csrf"]
	c.advance(59 * time.Minute)
	wantSessionServed(t, "idle for 59m", idle)
	c.advance(50 * time.Minute)
	if r := idle.get("/live"); r.status != http.StatusOK {
		t.Fatalf("the overview's refresh 50m after a page: %d", r.status)
	}
	c.advance(11 * time.Minute)
	wantSessionRefused(t, "61m after its last page, 11m after a refresh", idle, d, pause)

	busy := newBrowser(t, d.url)
	busy.login()
	pause["csrf"] = confirmForm(t, busy.page("/action/activation?topic=orders&to=PAUSED"))["csrf"]
	for range 5 {
		c.advance(35 * time.Minute)
		wantSessionServed(t, "busy, within its maximum age", busy)
	}
	c.advance(10 * time.Minute) // 3h05m after the login
	wantSessionRefused(t, "busy, beyond its maximum age", busy, d, pause)
}

// TestServeSessionFlags runs taskctl serve with bad session durations:
// bad usage, exit 2.
func TestServeSessionFlags(t *testing.T) {
	db := sqliteURL(t)
	wantExit(t, db, exitUsage, "--session-idle must be above zero", "serve", "--session-idle", "0s")
	wantExit(t, db, exitUsage, "--session-max-age", "serve", "--session-max-age", "soon")
	wantExit(t, db, exitUsage, "--refresh", "serve", "--refresh", "10ms")
}

// TestServeThrottlesLogins sends wrong tokens in a row from one address:
// after five, the address waits before its next token is even compared,
// the right one too, and each wrong token after a wait doubles it; a
// bearer header waits alike. The dashboard's clock moves; nothing sleeps.
func TestServeThrottlesLogins(t *testing.T) {
	c := newClock()
	d := sessionDashboard(t, c, 0, 0)
	br := newBrowser(t, d.url)
	wrong := url.Values{"token": {"guess-guess-guess"}, "next": {"/"}}
	attempt := func(values url.Values, want int, retry string) {
		t.Helper()
		r := br.post("/login", values)
		if r.status != want || r.header.Get("Retry-After") != retry {
			t.Fatalf("login: %d, Retry-After %q; want %d, %q\n%s", r.status, r.header.Get("Retry-After"), want, retry, r.body)
		}
	}
	for range 5 {
		attempt(wrong, http.StatusUnauthorized, "")
	}
	attempt(wrong, http.StatusTooManyRequests, "1")
	attempt(url.Values{"token": {testToken}}, http.StatusTooManyRequests, "1")
	script := newBrowser(t, d.url)
	if r := script.do(http.MethodGet, "/owners", nil, http.Header{"Authorization": {"Bearer " + testToken}}); r.status != http.StatusTooManyRequests {
		t.Errorf("a bearer token while the address waits: %d, want 429", r.status)
	}
	for _, wait := range []int{2, 4, 8} {
		c.advance(time.Duration(wait/2) * time.Second)
		attempt(wrong, http.StatusUnauthorized, "")
		attempt(wrong, http.StatusTooManyRequests, fmt.Sprint(wait))
		c.advance(time.Duration(wait-1) * time.Second)
		attempt(wrong, http.StatusTooManyRequests, "1")
	}
	c.advance(time.Second)
	br.login()
	attempt(wrong, http.StatusUnauthorized, "") // the right token forgave the address
}

// craftedNext are next values of a login that try to send the browser to
// another site: control characters a browser drops, a scheme, a host, two
// slashes or a backslash, raw or encoded.
var craftedNext = []string{
	"/\t/evil.example/", "/\n/evil.example/", "/\r\n/evil.example", "\t//evil.example", " //evil.example",
	"//evil.example", "///evil.example", `/\evil.example`, `\\evil.example`, `/\/evil.example`,
	"https://evil.example/", "http:evil.example", "javascript:alert(1)", "//evil.example@x",
	"/%2F%2Fevil.example", "%2F%2Fevil.example", "/%5Cevil.example", "/%09/evil.example/", "/%0a/evil.example",
	"/\x00/evil.example", "/\x7f/evil.example",
}

// landsHere says whether a Location leads to a page of base, as a browser
// reads it (WHATWG URL): tabs and newlines dropped, controls and spaces
// trimmed, backslashes taken for slashes.
func landsHere(base, location string) bool {
	loc := strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, location)
	loc = strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	b, _ := url.Parse(base)
	u, err := b.Parse(loc)
	return err == nil && strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") && u.Host == b.Host
}

// TestServeLoginStaysLocal logs in with crafted next values, posted and
// through the login form's own field: every one lands on a page of the
// dashboard.
func TestServeLoginStaysLocal(t *testing.T) {
	d := sessionDashboard(t, newClock(), 0, 0)
	hidden := regexp.MustCompile(`name="next" value="([^"]*)"`)
	for _, next := range craftedNext {
		form := newBrowser(t, d.url).page("/login?next=" + url.QueryEscape(next))
		m := hidden.FindStringSubmatch(form)
		if m == nil {
			t.Fatalf("the login form has no next field:\n%s", form)
		}
		for how, value := range map[string]string{"posted": next, "through the form": html.UnescapeString(m[1])} {
			status, loc := rawLogin(t, d.url, value)
			if status != http.StatusSeeOther || !landsHere(d.url, loc) {
				t.Errorf("login with next %q %s: %d to %q, not a page of the dashboard", next, how, status, loc)
			}
		}
	}
	if _, loc := rawLogin(t, d.url, "/topic?topic=orders&state=FAILED"); loc != "/topic?topic=orders&state=FAILED" {
		t.Errorf("login with a plain next: to %q, want it kept", loc)
	}
}

// rawLogin logs in at base with the token and next, and returns the status
// and the Location as sent: a round trip of its own, since Go's client
// refuses a Location with control characters (a browser drops them).
func rawLogin(t *testing.T, base, next string) (int, string) {
	t.Helper()
	body := url.Values{"token": {testToken}, "next": {next}}.Encode()
	req, err := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil { // a Location that breaks HTTP: as bad as one that leaves
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
