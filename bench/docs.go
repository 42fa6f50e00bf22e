package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// The figures in the docs are written by the bench, never by hand: a block
// between <!-- bench:NAME --> and <!-- /bench:NAME --> in a Markdown file
// is what the results hold for NAME (docBlocks), and --docs rewrites every
// such block from the results of --replay; --docs with --check changes
// nothing and fails when a block differs, so that CI catches docs that
// drifted from bench/results.

// docBlocks renders the blocks a document may hold, by name.
func docBlocks(r *Report) map[string]string {
	blocks := statementBlocks(r)
	// A document may hold the blocks of several results (README: the
	// failovers' and the sizing's; docs/tenants.md: the capacity's table and
	// the limits' and the renderer's): a block whose results r does not hold
	// is left as it is. The results of the limits or the renderer scenario
	// alone hold no table.
	switch {
	case rendererOnly(r):
		blocks["renderer"] = rendererText(r)
	case len(r.Figures) > 0 || r.Limits == nil:
		var table bytes.Buffer
		writeTable(&table, r)
		blocks["table"], blocks["machine"] = table.String(), machineText(r)
	}
	if r.Failover != nil {
		blocks["failover"] = failoverText(r)
	}
	if r.AutoFailover != nil {
		blocks["autofailover_"+r.AutoFailover.Settings] = autoFailoverText(r)
	}
	if r.Sizing != nil {
		blocks["sizing"], blocks["sizing_summary"] = sizingText(r), sizingSummary(r)
	}
	if r.Limits != nil {
		blocks["limits"] = limitsText(r)
	}
	return blocks
}

// otherBlocks are the blocks of results that a report may not hold.
var otherBlocks = []string{"failover", "autofailover_tuned", "autofailover_defaults", "sizing", "sizing_summary", "limits", "renderer", "table", "machine"}

// machineText says when and where the results were measured.
func machineText(r *Report) string {
	m := r.Machine
	date, _, _ := strings.Cut(r.Date, "T")
	return fmt.Sprintf("Measured on %s in %s: %d vCPUs, %.1f GiB of memory, %s, %s; %s on the same machine.\n",
		date, r.Duration, m.CPUs, m.MemoryGiB, m.OS, m.Go, firstWords(m.PostgreSQL, 2))
}

// blockPattern finds the generated blocks of a document.
var blockPattern = regexp.MustCompile(`(?s)(<!-- bench:([a-z0-9_]+) -->\n)(.*?)(<!-- /bench:([a-z0-9_]+) -->)`)

// renderDocs returns doc with every generated block written from r.
func renderDocs(doc []byte, r *Report) ([]byte, error) {
	blocks := docBlocks(r)
	var err error
	out := blockPattern.ReplaceAllFunc(doc, func(m []byte) []byte {
		parts := blockPattern.FindSubmatch(m)
		name, end := string(parts[2]), string(parts[5])
		body, ok := blocks[name]
		switch {
		case name != end:
			err = fmt.Errorf("block %q ends as %q", name, end)
		case !ok && slices.Contains(otherBlocks, name):
			return m
		case !ok:
			err = fmt.Errorf("no block named %q (have %s)", name, strings.Join(slices.Sorted(maps.Keys(blocks)), ", "))
		}
		if err != nil {
			return m
		}
		return []byte(string(parts[1]) + body + string(parts[4]))
	})
	return out, err
}

// updateDocs rewrites the generated blocks of each file from r, or, with
// check, reports the files whose blocks differ from r.
func updateDocs(files []string, r *Report, check bool) error {
	var stale []string
	for _, file := range files {
		doc, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		out, err := renderDocs(doc, r)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if !blockPattern.Match(doc) {
			return fmt.Errorf("%s holds no <!-- bench:NAME --> block", file)
		}
		switch {
		case bytes.Equal(doc, out):
		case check:
			stale = append(stale, file)
		default:
			if err := os.WriteFile(file, out, 0o644); err != nil {
				return err
			}
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("the figures of %s differ from the results: rewrite them with --replay RESULTS --docs FILES", strings.Join(stale, ", "))
	}
	return nil
}
