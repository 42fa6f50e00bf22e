package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// TestBadInputIsRefusedAndChangesNothing gives every command wrong input
// and checks the exit code, that the message names the problem, and that
// nothing changed.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	db := sqliteURL(t)
	must(t, db, "topic", "init", "orders")
	must(t, db, "push", "-t", "orders", "a", "b")
	long := strings.Repeat("x", 501)
	cases := []struct {
		name  string
		stdin string
		code  int
		want  string
		args  []string
	}{
		{"unknown command", "", exitUsage, `unknown command "frobnicate"`, []string{"frobnicate"}},
		{"unknown flag", "", exitUsage, "unknown flag: --colour", []string{"list", "-t", "orders", "--colour"}},
		{"flag without value", "", exitUsage, "flag needs an argument", []string{"list", "-t"}},
		{"bad number", "", exitUsage, `invalid argument "ten"`, []string{"list", "-t", "orders", "--limit", "ten"}},
		{"no topic", "", exitUsage, "--topic is required", []string{"list"}},
		{"unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"list", "-t", "nope"}},
		{"bad state", "", exitUsage, `--state "finished"`, []string{"list", "-t", "orders", "--state", "finished"}},
		{"limit out of range", "", exitUsage, "--limit 0", []string{"list", "-t", "orders", "--limit", "0"}},
		{"bad time", "", exitUsage, `--since "yesterday"`, []string{"list", "-t", "orders", "--since", "yesterday"}},
		{"cursor both ways", "", exitUsage, "--after pages forward", []string{"list", "-t", "orders", "--after", "1", "--before", "5"}},
		{"show unknown task", "", exitNotFound, "no topic has a task 999", []string{"show", "999"}},
		{"show bad sequence", "", exitUsage, `sequence "x1"`, []string{"show", "x1"}},
		{"push to unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"push", "-t", "nope", "c"}},
		{"push nothing", "", exitUsage, "nothing to push", []string{"push", "-t", "orders"}},
		{"push bad insertion", "", exitUsage, `--insertion "sideways"`, []string{"push", "-t", "orders", "--insertion", "sideways", "c"}},
		{"push long identifier", "", exitUsage, "identifier", []string{"push", "-t", "orders", long}},
		{"push bad JSON line", `{"identifier":"c"}` + "\n" + `{"identifier":` + "\n", exitUsage, "line 2", []string{"push", "-t", "orders", "--file", "-"}},
		{"push unknown field", `{"identifier":"c","priority":1}`, exitUsage, `unknown field "priority"`, []string{"push", "-t", "orders", "--file", "-"}},
		{"push line without identifier", `{"identifier":"c"}` + "\n" + `{"input":"x"}`, exitUsage, "line 2", []string{"push", "-t", "orders", "--file", "-"}},
		{"push NUL byte", `{"identifier":"c\u0000d"}`, exitUsage, "line 1", []string{"push", "-t", "orders", "--file", "-"}},
		{"push bad not_before", `{"identifier":"c","not_before":"soon"}`, exitUsage, `not_before "soon"`, []string{"push", "-t", "orders", "--file", "-"}},
		{"push CSV unknown column", "identifier,colour\nc,red\n", exitUsage, `unknown column "colour"`, []string{"push", "-t", "orders", "--file", "-", "--format", "csv"}},
		{"push CSV without identifier", "input\nx\n", exitUsage, "no identifier column", []string{"push", "-t", "orders", "--file", "-", "--format", "csv"}},
		{"push CSV ragged", "identifier,input\nc,x\nd\n", exitUsage, "wrong number of fields", []string{"push", "-t", "orders", "--file", "-", "--format", "csv"}},
		{"push missing file", "", exitUsage, "no such file", []string{"push", "-t", "orders", "--file", filepath.Join(t.TempDir(), "none.jsonl")}},
		{"revive READY", "", exitUsage, "only EXPIRED to SUCCEEDED", []string{"revive", "-t", "orders", "--state", "ready"}},
		{"revive nothing named", "", exitUsage, "say which tasks", []string{"revive", "-t", "orders"}},
		{"revive both ways", "", exitUsage, "not both", []string{"revive", "-t", "orders", "--state", "failed", "--sequence", "1"}},
		{"revive bad mode", "", exitUsage, `--how "again"`, []string{"revive", "-t", "orders", "--state", "failed", "--how", "again"}},
		{"revive READY by sequence", "", exitFailure, "task 1: task state mismatch", []string{"revive", "-t", "orders", "--sequence", "1"}},
		{"reassign without result", "", exitUsage, "--result is required", []string{"reassign", "-t", "orders", "--state", "failed"}},
		{"reassign bad result", "", exitUsage, `--result "maybe"`, []string{"reassign", "-t", "orders", "--state", "failed", "--result", "maybe"}},
		{"defer without time", "", exitUsage, "--until TIME or --for DURATION", []string{"defer", "-t", "orders", "--sequence", "1"}},
		{"defer bad duration", "", exitUsage, `--for "-5m"`, []string{"defer", "-t", "orders", "--sequence", "1", "--for", "-5m"}},
		{"defer unknown task", "", exitNotFound, "has no task 999", []string{"defer", "-t", "orders", "--sequence", "999", "--for", "1m"}},
		{"purge reversed range", "", exitUsage, "--from 9 is after --to 3", []string{"purge", "-t", "orders", "--from", "9", "--to", "3", "--yes"}},
		{"purge two times", "", exitUsage, "not both", []string{"purge", "-t", "orders", "--before", "2026-01-01", "--older-than", "1h", "--yes"}},
		{"purge bad time", "", exitUsage, `--before "last week"`, []string{"purge", "-t", "orders", "--before", "last week", "--yes"}},
		{"purge unconfirmed", "", exitUsage, "pass --yes", []string{"purge", "-t", "orders", "--state", "ready"}},
		{"resolve bad time", "", exitUsage, `TIMESTAMP "noon"`, []string{"resolve", "noon"}},
		{"expire without after", "", exitUsage, "--after is required", []string{"expire"}},
		{"owners bad window", "", exitUsage, `--within "forever"`, []string{"owners", "list", "--within", "forever"}},
		{"destroy unconfirmed", "", exitUsage, "pass --yes", []string{"topic", "destroy", "orders"}},
		{"pause unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"topic", "pause", "nope"}},
		{"init bad topic", "", exitUsage, "topic", []string{"topic", "init", long}},
		{"capacity negative", "", exitUsage, `capacity "-1": give a whole number of READY tasks`, []string{"topic", "capacity", "orders", "-1"}},
		{"capacity not a number", "", exitUsage, `capacity "ten": give a whole number`, []string{"topic", "capacity", "orders", "ten"}},
		{"capacity fraction", "", exitUsage, `capacity "1.5"`, []string{"topic", "capacity", "orders", "1.5"}},
		{"capacity too many arguments", "", exitUsage, "accepts between 1 and 2 arg(s)", []string{"topic", "capacity", "orders", "1", "2"}},
		{"capacity unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"topic", "capacity", "nope", "5"}},
		{"capacity of unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"topic", "capacity", "nope"}},
		{"limits negative", "", exitUsage, `--active "-1": give a whole number of ACTIVE tasks, at least 1, or 0 to remove the limit`, []string{"topic", "limits", "orders", "--active", "-1"}},
		{"limits not a number", "", exitUsage, `--per-identifier "two": give a whole number of ACTIVE tasks`, []string{"topic", "limits", "orders", "--active", "5", "--per-identifier", "two"}},
		{"limits empty", "", exitUsage, `--active "": give a whole number`, []string{"topic", "limits", "orders", "--active", ""}},
		{"limits without a topic", "", exitUsage, "accepts 1 arg(s), received 0", []string{"topic", "limits"}},
		{"limits unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"topic", "limits", "nope", "--active", "5"}},
		{"limits of unknown topic", "", exitNotFound, `unknown topic "nope"`, []string{"topic", "limits", "nope"}},
		{"results reversed", "", exitUsage, "--since is after --until", []string{"results", "--since", "1h", "--until", "2h"}},
	}
	for _, c := range cases {
		out := taskctl(t, db, c.stdin, c.args...)
		if out.code != c.code || !strings.Contains(out.stderr, c.want) {
			t.Errorf("%s: taskctl %q: exit %d, stderr %q; want exit %d and %q", c.name, c.args, out.code, out.stderr, c.code, c.want)
		}
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 2})
	if got := decode[[]struct{ Topic string }](t, must(t, db, "topic", "list", "--json")); len(got) != 1 {
		t.Errorf("topics after the bad input: %+v", got)
	}
	for _, e := range cliAudit(t, db, "--limit", "1000") {
		if e.Action != "topic init" {
			t.Errorf("bad input was audited: %+v", e)
		}
	}
}

// TestBadDatabasesAreNamed checks the errors for URLs that cannot work.
func TestBadDatabasesAreNamed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, url string
		code      int
		want      string
	}{
		{"unknown scheme", "oracle://db/x", exitUsage, `unsupported database URL scheme "oracle"`},
		{"no scheme", "localhost:5432", exitUsage, "unsupported database URL scheme"},
		{"bad port", "postgres://u@h:notaport/db", exitUsage, `invalid port ":notaport"`}, {"bad PostgreSQL option", "postgres://u@h/db?sslmode=sometimes", exitUsage, "bad PostgreSQL URL"},
		{"MySQL without database", "mysql://root@127.0.0.1:3306/", exitUsage, "needs a host and a database"},
		{"SQLite without file", "sqlite:", exitUsage, "names no file"},
		{"missing SQLite file", "sqlite:" + filepath.Join(dir, "none.db"), exitUnreachable, "no database file"},
		{"nobody listening", "postgres://postgres@127.0.0.1:1/x?connect_timeout=5", exitUnreachable, "cannot reach postgres://postgres@127.0.0.1:1/x"},
		{"password kept out", "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=5", exitUnreachable, "cannot reach"},
		{"not migrated", testdb.EmptyPostgresURL(t), exitUnreachable, "no taskrepo schema: run 'taskctl migrate'"},
	}
	for _, c := range cases {
		out := wantExit(t, c.url, c.code, c.want, "topic", "list")
		if strings.Contains(out.stderr, "s3cret") {
			t.Errorf("%s: the password shows in %q", c.name, out.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
		t.Error("a read on a missing SQLite file created it")
	}
	wantExit(t, "", exitUnreachable, "no database file taskrepo.db", "count")
}
