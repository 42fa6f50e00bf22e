package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// cliAudit reads the audit log with 'taskctl audit --json'.
func cliAudit(t testing.TB, db string, args ...string) []auditJSON {
	t.Helper()
	return decode[struct {
		Entries []auditJSON `json:"entries"`
	}](t, must(t, db, append([]string{"audit", "--json"}, args...)...)).Entries
}

// wantCLIAudited fails t unless the audit log holds exactly one entry
// more than before, the newest, by the OS user from the cli, with action,
// changed and params holding each of params; it returns the number of
// entries.
func wantCLIAudited(t testing.TB, db string, before int, action string, changed int64, params ...string) int {
	t.Helper()
	entries := cliAudit(t, db, "--limit", "1000")
	if len(entries) != before+1 {
		t.Fatalf("after %s the audit log holds %d entries, want %d: %+v", action, len(entries), before+1, entries)
	}
	e := entries[0]
	if e.Actor != currentUser(t) || e.Origin != "cli" || e.Action != action || e.Changed != changed {
		t.Errorf("entry of %s = %+v; want actor %q, origin cli, action %q, changed %d", action, e, currentUser(t), action, changed)
	}
	var compact bytes.Buffer
	json.Compact(&compact, e.Params)
	for _, p := range params {
		if !strings.Contains(compact.String(), p) {
			t.Errorf("entry of %s has params %s, want %s in them", action, e.Params, p)
		}
	}
	return len(entries)
}

// currentUser names the user who runs the test, as taskctl does.
func currentUser(t testing.TB) string {
	u, err := user.Current()
	if err != nil {
		t.Fatalf("user.Current: %v", err)
	}
	return u.Username
}

// TestAuditCommands runs every changing command on SQLite, PostgreSQL and
// MySQL: each writes exactly one entry, by the OS user, with its
// parameters, bound and count; the reads, a dry run and a declined
// confirmation write none; 'taskctl audit' pages with --before and
// refuses bad flags.
func TestAuditCommands(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			n := 0
			must(t, db, "topic", "init", "orders", "spare")
			n = wantCLIAudited(t, db, n, "topic init", 2, `"topic":["orders","spare"]`)
			must(t, db, "push", "-t", "orders", "a", "b", "c", "d", "e", "f")
			if got := cliAudit(t, db); len(got) != n {
				t.Fatalf("a push was recorded: %+v", got)
			}
			for _, c := range []struct{ cmd, state string }{{"pause", "PAUSED"}, {"drain", "DRAINING"}, {"resume", "RUNNING"}} {
				must(t, db, "topic", c.cmd, "orders")
				n = wantCLIAudited(t, db, n, "topic "+c.cmd, 1, `"topic":["orders"]`)
			}
			failed := settle(t, db, "test-consumer", "orders", 3, taskapi.Failure)
			must(t, db, "revive", "-t", "orders", "--state", "failed", "--to", fmt.Sprint(failed[1].Sequence))
			n = wantCLIAudited(t, db, n, "revive", 2, `"state":"failed"`)
			if e := cliAudit(t, db)[0]; e.Bound != fmt.Sprintf("sequences up to %d", failed[1].Sequence) {
				t.Errorf("the revive's bound is %q, want its range", e.Bound)
			}
			must(t, db, "reassign", "-t", "orders", "--sequence", fmt.Sprint(failed[2].Sequence), "--result", "success")
			n = wantCLIAudited(t, db, n, "reassign", 1, `"result":"success"`, fmt.Sprint(failed[2].Sequence))
			must(t, db, "defer", "-t", "orders", "--for", "1h", "--from", "1")
			n = wantCLIAudited(t, db, n, "defer", 5, `"for":"1h"`)
			for _, read := range [][]string{{"list", "-t", "orders"}, {"count"}, {"results", "--since", "1h"},
				{"topic", "list"}, {"owners", "list"}, {"resolve", "1h"}, {"audit"}, {"purge", "-t", "orders", "--state", "succeeded", "--dry-run"},
				{"show", "-t", "orders", fmt.Sprint(failed[0].Sequence)}} {
				must(t, db, read...)
			}
			wantExit(t, db, exitUsage, "--yes", "topic", "destroy", "spare") // refused: no terminal to ask on
			// A change refused by the database (the task is READY again) changes
			// nothing, and records nothing.
			wantExit(t, db, exitFailure, "state mismatch", "revive", "-t", "orders", "--sequence", fmt.Sprint(failed[0].Sequence))
			if got := cliAudit(t, db, "--limit", "1000"); len(got) != n {
				t.Fatalf("reads or a refused change recorded entries: %+v", got[:len(got)-n])
			}
			must(t, db, "purge", "-t", "orders", "--state", "succeeded", "--yes")
			n = wantCLIAudited(t, db, n, "purge", 1, `"state":["succeeded"]`)
			if e := cliAudit(t, db)[0]; !strings.HasPrefix(e.Bound, "sequences ") || !strings.Contains(e.Outcome, "purged 1 tasks") {
				t.Errorf("the purge's entry has bound %q and outcome %q, want its sequences and what it did", e.Bound, e.Outcome)
			}
			must(t, db, "expire", "--after", "1h")
			n = wantCLIAudited(t, db, n, "expire", 0, `"after":"1h"`)
			must(t, db, "owners", "purge", "--after", "1h")
			n = wantCLIAudited(t, db, n, "owners purge", 0, `"after":"1h"`)
			must(t, db, "topic", "destroy", "spare", "--yes")
			n = wantCLIAudited(t, db, n, "topic destroy", 1, `"topic":["spare"]`)

			all := cliAudit(t, db, "--limit", "1000")
			older := cliAudit(t, db, "--limit", "3", "--before", fmt.Sprint(all[2].ID))
			if len(older) != 3 || older[0].ID != all[3].ID || older[2].ID != all[5].ID {
				t.Errorf("audit --before %d --limit 3 = %+v, want entries 4 to 6 of %+v", all[2].ID, older, all)
			}
			if text := must(t, db, "audit", "--limit", "2"); !strings.Contains(text, "topic destroy") || !strings.Contains(text, fmt.Sprintf("older: taskctl audit --before %d", all[1].ID)) {
				t.Errorf("audit --limit 2 prints:\n%s", text)
			}
			wantExit(t, db, exitUsage, "--limit", "audit", "--limit", "0")
			wantExit(t, db, exitUsage, "--before", "audit", "--before", "-1")
			if got := len(cliAudit(t, db, "--limit", "1000")); got != n {
				t.Errorf("the audit log holds %d entries after reading it, want %d", got, n)
			}
			for _, e := range all {
				if time.Since(e.At) > time.Hour {
					t.Errorf("entry %+v recorded long ago", e)
				}
			}
		})
	}
}

// TestAuditPrintsHostileAsText records a change to a topic whose name
// holds a terminal escape and a bidirectional control: 'taskctl audit'
// prints neither to the terminal, and --json keeps the name as it is.
func TestAuditPrintsHostileAsText(t *testing.T) {
	db := sqliteURL(t)
	topic := "\x1b[2J\x1b[31mred\u202eeman"
	must(t, db, "topic", "init", topic)
	text := must(t, db, "audit")
	if strings.ContainsAny(text, "\x1b\u202e") || !strings.Contains(text, "topic init") {
		t.Errorf("taskctl audit printed an escape or a bidirectional control:\n%q", text)
	}
	var params struct {
		Topic []string `json:"topic"`
	}
	if err := json.Unmarshal(cliAudit(t, db)[0].Params, &params); err != nil || len(params.Topic) != 1 || params.Topic[0] != topic {
		t.Errorf("audit --json params hold %+v (%v), want the topic as it is", params, err)
	}
}
