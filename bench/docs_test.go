package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderDocsRewritesOnlyItsBlocks(t *testing.T) {
	ratio := 2.0
	r := &Report{Date: "2026-11-27T10:00:00Z", Duration: "1m", Machine: Machine{CPUs: 2, OS: "linux/amd64", Go: "go1.26", PostgreSQL: "PostgreSQL 15.20 on x86_64"},
		Figures: []Figure{{Name: "burn-down", Unit: "tasks/s", Taskrepo: &ratio, River: &ratio, Ratio: &ratio}}}
	doc := "before\n<!-- bench:table -->\nstale\n<!-- /bench:table -->\nbetween\n<!-- bench:machine -->\n<!-- /bench:machine -->\nafter\n"
	out, err := renderDocs([]byte(doc), r)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"before\n<!-- bench:table -->\n| figure |", "| burn-down | tasks/s | 2.00 | 2.00 |", "\nbetween\n",
		"Measured on 2026-11-27 in 1m: 2 vCPUs", "PostgreSQL 15.20 on the same machine.\n<!-- /bench:machine -->\nafter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered doc lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stale") {
		t.Errorf("the old block stayed:\n%s", got)
	}
	again, err := renderDocs(out, r)
	if err != nil || string(again) != got {
		t.Errorf("rendering twice changed the doc (%v)", err)
	}
}

func TestRenderDocsRefusesUnknownAndMismatchedBlocks(t *testing.T) {
	for _, doc := range []string{"<!-- bench:nope -->\n<!-- /bench:nope -->", "<!-- bench:table -->\n<!-- /bench:machine -->"} {
		if _, err := renderDocs([]byte(doc), &Report{}); err == nil {
			t.Errorf("renderDocs(%q) = nil error", doc)
		}
	}
}

func TestUpdateDocsCheckChangesNothingAndFailsWhenStale(t *testing.T) {
	file := filepath.Join(t.TempDir(), "doc.md")
	stale := "<!-- bench:machine -->\nold\n<!-- /bench:machine -->\n"
	if err := os.WriteFile(file, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Report{Date: "2026-11-27T10:00:00Z"}
	if err := updateDocs([]string{file}, r, true); err == nil {
		t.Error("--check of a stale doc = nil error")
	}
	if got, _ := os.ReadFile(file); string(got) != stale {
		t.Errorf("--check changed the doc: %q", got)
	}
	if err := updateDocs([]string{file}, r, false); err != nil {
		t.Fatal(err)
	}
	if err := updateDocs([]string{file}, r, true); err != nil {
		t.Errorf("--check after a rewrite = %v", err)
	}
}

func TestTheDocsHoldTheRecordedFigures(t *testing.T) {
	for _, c := range []struct{ results, doc string }{
		{"results/baseline.json", "../docs/performance.md"},
		{"results/capacity.json", "../docs/tenants.md"}, // go run . --only capacity --json results/capacity.json
		{"results/limits.json", "../docs/tenants.md"},   // go run . --only limits --json results/limits.json --chart '' --baseline ''
		{"results/renderer.json", "../docs/tenants.md"}, // go run . --only renderer --json results/renderer.json --chart '' --baseline ''
		// TASK_TEST_FAILOVERS=100 TASK_TEST_FAILOVER_RESULTS=$PWD/bench/results/failover.json go test -run '^TestFailoverLosesNothingCommitted$' ./faults
		{"results/failover.json", "../README.md"},
		{"results/sizing.json", "../docs/operating.md"}, // go run . --only sizing --json results/sizing.json
		// TASK_TEST_AUTOFAILOVER_ROUNDS=10 TASK_TEST_AUTOFAILOVER_RESULTS=$PWD/bench/results/autofailover_tuned.json go test -tags heavy -run '^TestAutoFailoverLosesNothingCommitted$' ./faults
		{"results/autofailover_tuned.json", "../docs/operating.md"},
		// the same with TASK_TEST_AUTOFAILOVER_SETTINGS=defaults, 10 rounds, into results/autofailover_defaults.json
		{"results/autofailover_defaults.json", "../docs/operating.md"},
		{"results/sizing.json", "../README.md"},
	} {
		data, err := os.ReadFile(c.results)
		if err != nil {
			t.Fatal(err)
		}
		r, err := parseReport(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := updateDocs([]string{c.doc}, r, true); err != nil {
			t.Errorf("%s against %s: %v", c.doc, c.results, err)
		}
	}
}
