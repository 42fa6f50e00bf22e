package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// needBrowser skips t without chromium, or fails it when
// TASK_TEST_REQUIRE_BROWSER=1.
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("TASK_TEST_REQUIRE_BROWSER") == "1" {
			t.Fatalf("TASK_TEST_REQUIRE_BROWSER=1 and there is no %s: %v", chromiumPath, err)
		}
		t.Skipf("no %s (apt-get install chromium): the browser tests skip", chromiumPath)
	}
}

// watcher runs in every page before its own scripts: it records the
// violations of the CSP and every dialog a script opens, so that a test
// sees whether anything from the data ran, or anything of the page was
// refused.
const watcher = `
window.__csp = []; window.__dialogs = [];
document.addEventListener('securitypolicyviolation', function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); });
window.alert = window.confirm = window.prompt = function (m) { window.__dialogs.push(String(m)); };
`

// tab is a headless Chromium tab of a test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// newTab starts a headless Chromium of its own (a fresh profile, no
// network but this machine's) with a window of width by height.
func newTab(t *testing.T, width, height int) *tab {
	t.Helper()
	needBrowser(t)
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height))
	ctx, stopTab := chromedp.NewContext(alloc)
	ctx, stopTime := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { stopTime(); stopTab(); stopAlloc() })
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watcher}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &tab{t: t, ctx: ctx}
}

// do runs actions and fails the test on error.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *tab, expression string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expression, err)
	}
	return v
}

// open loads url and checks the page.
func (b *tab) open(url string) {
	b.t.Helper()
	b.do("open "+url, chromedp.Navigate(url))
	b.check()
}

// click clicks the element that css selects and waits for the page that
// follows to be loaded, then checks it.
func (b *tab) click(css string) {
	b.t.Helper()
	eval[bool](b, `window.__old = true`)
	b.press(css)
	b.until("the page after clicking "+css+" is loaded", func() bool {
		// While the tab navigates, an evaluation may meet the page that
		// is going away ("Inspected target navigated or closed"): not
		// loaded yet.
		loaded, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!window.__old && document.readyState === 'complete'`))
		return err == nil && loaded
	})
	b.check()
}

// tick clicks the element that css selects, a checkbox say, that loads
// no page.
func (b *tab) tick(css string) {
	b.t.Helper()
	b.press(css)
}

// press clicks the element that css selects. The overview replaces its
// figures while it refreshes itself, so a node found may be gone by the
// click: the click is tried again then.
func (b *tab) press(css string) {
	b.t.Helper()
	var err error
	for range 10 {
		if err = chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible)); err == nil ||
			!strings.Contains(err.Error(), "Could not find node") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("click %s: %v", css, err)
	}
}

// with returns the tab for the subtest t.
func (b *tab) with(t *testing.T) *tab { return &tab{t: t, ctx: b.ctx} }

// set sets the value of the form field that css selects.
func (b *tab) set(css, value string) {
	b.t.Helper()
	b.do("set "+css, chromedp.SetValue(chromedp.CSS(css), value))
}

// texts returns the text of every element that css selects.
func (b *tab) texts(css string) []string {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	return eval[[]string](b, `Array.from(document.querySelectorAll(`+string(sel)+`)).map(e => e.textContent)`)
}

// text returns the text of the first element that css selects.
func (b *tab) text(css string) string {
	b.t.Helper()
	texts := b.texts(css)
	if len(texts) == 0 {
		b.t.Fatalf("no %s on %s", css, b.location())
	}
	return texts[0]
}

// location is the page's URL.
func (b *tab) location() string {
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	return loc
}

// until polls cond until it holds, or fails the test after a while.
func (b *tab) until(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting until %s (at %s)", what, b.location())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check fails the test when the page broke its CSP, opened a dialog, holds
// a script other than the dashboard's own or an element with an inline
// event handler, or shows an image from the data.
func (b *tab) check() {
	b.t.Helper()
	if bad := eval[[]string](b, `(window.__csp || []).concat(window.__dialogs || [])`); len(bad) > 0 {
		b.t.Errorf("%s: CSP violations or dialogs: %q", b.location(), bad)
	}
	counts := eval[[]int](b, `[document.querySelectorAll('script').length, document.querySelectorAll('[onerror],[onclick],[onload]').length, document.querySelectorAll('main img').length]`)
	if counts[0] != 1 || counts[1] != 0 || counts[2] != 0 {
		b.t.Errorf("%s: %d scripts (want 1), %d inline handlers, %d images from the data", b.location(), counts[0], counts[1], counts[2])
	}
}

// served is the URL that taskctl serve prints.
var served = regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+)/`)

// startServe runs the taskctl binary's serve on database with args, on a
// free port of 127.0.0.1, and returns its URL; at the end of the test it
// is stopped with SIGINT and must exit 0.
func startServe(t *testing.T, database string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TASKREPO_DATABASE_URL="+database), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) || err != nil {
			t.Errorf("taskctl serve ended with %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := served.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("taskctl serve printed %q (%v)\n%s", line, err, stderr.String())
	}
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(out) }()
	return m[1]
}

// firstSeqs returns the sequences of the task rows of a topic's page.
func firstSeqs(b *tab) []string {
	return b.texts(`table.tasks tbody td.num a`)
}

// contains says whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}
