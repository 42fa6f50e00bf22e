package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Names that do not read as what they are: a right-to-left override makes
// "invoice‮fdp.exe" show as "invoiceexe.pdf"; a zero-width space and an
// isolate hide in plain sight.
const (
	bidiTopic      = "pay\u2067stnemyap\u2069-eu"
	bidiIdentifier = "invoice\u202efdp.exe"
	zeroWidthRef   = "order-1\u200b7"
)

// hiddenMark matches the mark the dashboard puts after a name that holds
// hidden characters, with its title.
var hiddenMark = regexp.MustCompile(`<span class="hidden-chars" title="([^"]*)">[^<]*</span>`)

// wantMarked fails t unless page shows name isolated (in a bdi element)
// and followed by the mark, whose title names each code point of want.
func wantMarked(t *testing.T, what, page, name string, want ...string) {
	t.Helper()
	isolated := "<bdi>" + name + "</bdi>" // html/template leaves these characters as they are
	at := strings.Index(page, isolated)
	if at < 0 {
		t.Errorf("%s does not show %q isolated in a bdi element", what, name)
		return
	}
	at += len(isolated)
	m := hiddenMark.FindStringSubmatchIndex(page[at:])
	if m == nil || m[0] > len("</span>") { // right after it, or after the end of its link or span
		t.Errorf("%s shows %q without the mark of hidden characters after it", what, name)
		return
	}
	title := page[at+m[2] : at+m[3]]
	for _, w := range want {
		if !strings.Contains(title, w) {
			t.Errorf("%s: the mark of %q says %q, which does not name %s", what, name, title, w)
		}
	}
}

// TestServeMarksHiddenCharacters shows a topic, an identifier and a
// reference that hold bidirectional controls and zero-width characters on
// every page that names them: each is isolated and marked, with a title
// that names the characters; plain names are not marked.
func TestServeMarksHiddenCharacters(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond})
	ctx := t.Context()
	if _, err := d.store.Initialize(ctx, bidiTopic); err != nil {
		t.Fatal(err)
	}
	tasks, err := d.store.Push(ctx, bidiTopic, taskapi.Append, []taskapi.Creation{
		{Identifier: bidiIdentifier, Reference: zeroWidthRef}, {Identifier: "plain-order"},
	})
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, d.url)
	topic := url.QueryEscape(bidiTopic)
	waitFor(t, "the overview lists the topic", func() bool { return strings.Contains(br.page("/"), "stnemyap") })
	wantMarked(t, "the overview", br.page("/"), bidiTopic, "U+2067", "U+2069")
	page := br.page("/topic?topic=" + topic)
	wantMarked(t, "the topic's page", page, bidiTopic, "U+2067")
	wantMarked(t, "the topic's tasks", page, bidiIdentifier, "U+202E", "right-to-left override")
	wantMarked(t, "the topic's tasks", page, zeroWidthRef, "U+200B", "zero-width space")
	page = br.page(fmt.Sprintf("/task?topic=%s&seq=%d", topic, tasks[0].Sequence))
	wantMarked(t, "the task's page", page, bidiIdentifier, "U+202E")
	wantMarked(t, "the task's page", page, zeroWidthRef, "U+200B")
	wantMarked(t, "the task's page", page, bidiTopic, "U+2067")
	if n := len(hiddenMark.FindAllString(br.page(fmt.Sprintf("/task?topic=%s&seq=%d", topic, tasks[1].Sequence)), -1)); n != 2 {
		t.Errorf("the page of the plain task holds %d marks, want 2 (the topic's, in the crumbs and the fields)", n)
	}
}
