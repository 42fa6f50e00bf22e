package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardScreenshots writes screenshots of the dashboard's main pages
// to the directory that TASKCTL_SCREENSHOTS names (relative to the root
// of the repository: TASKCTL_SCREENSHOTS=docs), taken in headless Chromium
// on PostgreSQL while the demo runs. It does nothing without the variable.
func TestDashboardScreenshots(t *testing.T) {
	dir := os.Getenv("TASKCTL_SCREENSHOTS")
	if dir == "" {
		t.Skip("TASKCTL_SCREENSHOTS=docs writes the dashboard's screenshots to docs/")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	db := postgresURL(t)
	must(t, db, "demo", "--tasks", "200")
	must(t, db, "topic", "pause", "demo.later") // an entry of the audit log
	must(t, db, "topic", "resume", "demo.later")
	ctx, stop := context.WithCancel(context.Background())
	demo := exec.CommandContext(ctx, binary, "demo", "--tasks", "40000", "--duration", "40s", "--consumers", "3")
	demo.Env = append(os.Environ(), "TASKREPO_DATABASE_URL="+db)
	var demoErr bytes.Buffer
	demo.Stderr = &demoErr
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); demo.Wait() }()
	base := startServe(t, db, nil, "--refresh", "1s")
	time.Sleep(25 * time.Second) // the charts fill
	b := newTab(t, 1280, 900)
	shots := []struct{ file, path string }{
		{"dashboard-overview.png", "/"},
		{"dashboard-topic.png", "/topic?topic=demo.orders&state=FAILED"},
		{"dashboard-owners.png", "/owners"},
		{"dashboard-results.png", "/results"},
		{"dashboard-failures.png", "/failures"},
		{"dashboard-search.png", "/search?topic=demo.orders&identifier=orders-0001"},
		{"dashboard-audit.png", "/audit"},
	}
	for _, s := range shots {
		b.open(base + s.path)
		shoot(b, filepath.Join(dir, s.file))
	}
	b.open(base + "/topic?topic=demo.retries&state=FAILED")
	b.click(`table.tasks tbody a[href^="/task"]`)
	shoot(b, filepath.Join(dir, "dashboard-task.png"))
	b.do("phone width", chromedp.EmulateViewport(390, 844))
	b.open(base + "/")
	shoot(b, filepath.Join(dir, "dashboard-phone.png"))
}

// shoot writes a PNG of the tab's viewport to file.
func shoot(b *tab, file string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(file, png, 0o644)
	}
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", file, err)
	}
}
