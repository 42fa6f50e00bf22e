package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// serveAt serves database with cfg on addr until stop is called (or the
// test ends), and fails the test if the server does not stop cleanly.
func serveAt(t *testing.T, database, addr string, cfg web.Config) (stop func()) {
	t.Helper()
	a := &app{database: database, stdout: io.Discard, stderr: io.Discard}
	s, err := a.open(t.Context())
	if err != nil {
		t.Fatalf("open %s: %v", database, err)
	}
	cfg.Store, cfg.Database = s, s.Shown()
	srv, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		s.Close()
	}
	t.Cleanup(stop)
	return stop
}

// TestBrowserLiveRefreshOutlivesARestart opens the overview in Chromium
// and stops the dashboard under it: the overview says that its figures
// are stale and keeps trying, and once a dashboard answers again on the
// same address it shows the new figures by itself, without a reload.
func TestBrowserLiveRefreshOutlivesARestart(t *testing.T) {
	needBrowser(t)
	db := sqliteURL(t)
	cfg := web.Config{Refresh: 200 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := serveAt(t, db, addr, cfg)
	b := newTab(t, 1280, 900)
	b.open("http://" + addr + "/")
	eval[bool](b, `window.__stay = true`)
	b.until("the overview refreshed itself", func() bool { return strings.Contains(b.text("#live-state"), "Live") })

	stop()
	b.until("the overview says its figures are stale", func() bool {
		return strings.Contains(b.text("#live-state"), "Stale") && eval[bool](b, `document.getElementById('figures').classList.contains('stale')`)
	})
	a := &app{database: db, stdout: io.Discard, stderr: io.Discard}
	s, err := a.open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Initialize(t.Context(), "after-restart"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	serveAt(t, db, addr, cfg)
	b.until("the overview shows the restarted dashboard's figures by itself", func() bool {
		return contains(b.texts("table.topics td.text a"), "after-restart")
	})
	if !eval[bool](b, `window.__stay === true`) {
		t.Errorf("the overview was reloaded instead of refreshed")
	}
	if state := b.text("#live-state"); !strings.Contains(state, "Live") || eval[bool](b, `document.getElementById('figures').classList.contains('stale')`) {
		t.Errorf("after the restart the overview still says %q, or looks stale", state)
	}
	b.check()
}
