package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestCancelRefusesBadInput gives cancel every kind of wrong input: each
// is refused with its exit code and a message that names the problem,
// before anything is asked of the repository, and nothing changes or is
// audited.
func TestCancelRefusesBadInput(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	must(t, db, "topic", "init", "orders")
	must(t, db, "push", "-t", "orders", "a", "b")
	cases := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"no topic", exitUsage, "requires at least 1 arg(s)", []string{"cancel"}},
		{"no tasks", exitUsage, "say which tasks: give their sequences after the topic, --identifier ID or --prefix TEXT", []string{"cancel", "orders"}},
		{"only commas", exitUsage, "say which tasks", []string{"cancel", "orders", ","}},
		{"both ways", exitUsage, "give sequences, --identifier or --prefix: one of them", []string{"cancel", "orders", "1", "--identifier", "a"}},
		{"prefix and sequences", exitUsage, "one of them", []string{"cancel", "orders", "1", "--prefix", "a"}},
		{"prefix and identifier", exitUsage, "one of them", []string{"cancel", "orders", "--identifier", "a", "--prefix", "a"}},
		{"empty identifier", exitUsage, "--identifier is empty", []string{"cancel", "orders", "--identifier", ""}},
		{"empty prefix", exitUsage, "--prefix is empty: it would name every task", []string{"cancel", "orders", "--prefix", ""}},
		{"prefix not UTF-8", exitUsage, "not valid UTF-8", []string{"cancel", "orders", "--prefix", "bad \xff"}},
		{"bad sequence", exitUsage, `sequence "x1" is not a positive whole number`, []string{"cancel", "orders", "x1"}},
		{"zero sequence", exitUsage, `sequence "0" is not a positive whole number`, []string{"cancel", "orders", "1", "0"}},
		{"negative sequence", exitUsage, "unknown shorthand flag: '1' in -1", []string{"cancel", "orders", "-1"}},
		{"reason not UTF-8", exitUsage, "--reason is not valid UTF-8 text", []string{"cancel", "orders", "1", "--reason", "bad \xff"}},
		{"reason too long", exitUsage, "--reason is 1001 bytes long: give at most 1000", []string{"cancel", "orders", "1", "--reason", strings.Repeat("x", 1001)}},
		{"unknown flag", exitUsage, "unknown flag: --state", []string{"cancel", "orders", "--state", "ready"}},
		{"unknown topic", exitNotFound, `unknown topic "nope"`, []string{"cancel", "nope", "1"}},
		{"unknown topic by identifier", exitNotFound, `unknown topic "nope"`, []string{"cancel", "nope", "--identifier", "a"}},
	}
	for _, c := range cases {
		out := taskctl(t, db, "", c.args...)
		if out.code != c.code || !strings.Contains(out.stderr, c.want) {
			t.Errorf("%s: taskctl %q: exit %d, stderr %q; want exit %d and %q", c.name, c.args, out.code, out.stderr, c.code, c.want)
		}
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 2})
	for _, e := range cliAudit(t, db, "--limit", "1000") {
		if e.Action != "topic init" {
			t.Errorf("bad input was audited: %+v", e)
		}
	}
}

// cancelJSON is what cancel --json prints.
type cancelJSON struct {
	Topic     string `json:"topic"`
	Tasks     int    `json:"tasks"`
	Cancelled []struct {
		Sequence   int64   `json:"sequence"`
		Identifier string  `json:"identifier"`
		Was        string  `json:"was"`
		Running    bool    `json:"running"`
		Owner      *string `json:"owner"`
	} `json:"cancelled"`
	Left    []int64 `json:"left"`
	Running []int64 `json:"running"`
}

// TestCancelCommand cancels a READY task and an ACTIVE one by sequence,
// then the READY tasks of an identifier, through the CLI on SQLite,
// PostgreSQL and MySQL: the output names each task, whether it ran and its owner;
// the stored tasks are CANCELLED with the reason in their output; a task
// in another state is left as it is; cancelling nothing is not an error;
// --json says the same; each run is audited with its parameters.
func TestCancelCommand(t *testing.T) {
	t.Parallel()
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cancelCommand(t, b.url(t))
		})
	}
}

// cancelCommand is TestCancelCommand on the database db.
func cancelCommand(t *testing.T, db string) {
	must(t, db, "topic", "init", "orders")
	must(t, db, "push", "-t", "orders", "a", "b", "c", "tenant", "tenant", "tenant")
	seqs := sequencesOf(listed(t, db, "-t", "orders"))
	held := hold(t, db, "worker-1", "orders", 1) // a, the oldest
	if held[0].Sequence != seqs[0] {
		t.Fatalf("held task %d, want %d", held[0].Sequence, seqs[0])
	}
	audited := len(cliAudit(t, db, "--limit", "1000"))

	out := must(t, db, "cancel", "orders", fmt.Sprint(seqs[0]), fmt.Sprint(seqs[1]), "--reason", "customer left")
	wantLines(t, out, "SEQUENCE IDENTIFIER WAS OWNER", fmt.Sprintf("%d a ACTIVE worker-1", seqs[0]),
		fmt.Sprintf("%d b READY -", seqs[1]), "cancelled 2 tasks of orders")
	for _, seq := range seqs[:2] {
		task := decode[taskJSON](t, must(t, db, "show", "-t", "orders", fmt.Sprint(seq), "--json"))
		if task.State != "CANCELLED" || task.Output != taskapi.CancelOutput("customer left") || task.Completed == nil {
			t.Errorf("task %d after cancel: %+v; want CANCELLED, completed, with output %q", seq, task, taskapi.CancelOutput("customer left"))
		}
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 4, "CANCELLED": 2})
	audited = wantCLIAudited(t, db, audited, "cancel", 2, `"topic":["orders"]`,
		fmt.Sprintf(`"sequence":[%d,%d]`, seqs[0], seqs[1]), `"reason":"customer left"`)

	// A task in another state, or not in the topic, is left: cancelling
	// nothing is not an error, and is audited as a change of nothing.
	out = must(t, db, "cancel", "orders", fmt.Sprint(seqs[0]), "999999")
	if !strings.Contains(out, "no task cancelled in orders") || !strings.Contains(out, fmt.Sprintf("left as they are (not READY, ACTIVE or SUSPENDED, or not in orders): %d, 999999", seqs[0])) {
		t.Errorf("cancelling nothing printed %q", out)
	}
	audited = wantCLIAudited(t, db, audited, "cancel", 0, `"sequence":[`)

	// --json: the cancelled tasks, and the sequences left.
	got := decode[cancelJSON](t, must(t, db, "cancel", "orders", fmt.Sprint(seqs[2]), fmt.Sprint(seqs[1]), "--json"))
	if got.Topic != "orders" || got.Tasks != 1 || len(got.Cancelled) != 1 || got.Cancelled[0].Sequence != seqs[2] ||
		got.Cancelled[0].Identifier != "c" || got.Cancelled[0].Was != "READY" || got.Cancelled[0].Running ||
		got.Cancelled[0].Owner != nil || len(got.Left) != 1 || got.Left[0] != seqs[1] {
		t.Errorf("cancel --json = %+v", got)
	}
	audited = wantCLIAudited(t, db, audited, "cancel", 1)

	// --identifier: every READY task of it; an ACTIVE one runs on.
	tenant := hold(t, db, "worker-2", "orders", 1)
	if tenant[0].Identifier != "tenant" {
		t.Fatalf("held %+v, want a task of tenant", tenant[0])
	}
	out = must(t, db, "cancel", "orders", "--identifier", "tenant")
	if !strings.Contains(out, "cancelled 2 tasks of orders") || strings.Contains(out, "ACTIVE") {
		t.Errorf("cancel --identifier printed %q", out)
	}
	wantStates(t, db, "orders", map[string]int64{"ACTIVE": 1, "CANCELLED": 5})
	audited = wantCLIAudited(t, db, audited, "cancel", 2, `"identifier":"tenant"`)
	if e := cliAudit(t, db, "--limit", "1")[0]; e.Bound != `the READY tasks of identifier "tenant"` {
		t.Errorf("bound of cancel --identifier = %q", e.Bound)
	}
	got = decode[cancelJSON](t, must(t, db, "cancel", "orders", "--identifier", "tenant", "--json"))
	if got.Tasks != 0 || len(got.Cancelled) != 0 || got.Left != nil {
		t.Errorf("cancel --identifier with no READY task left: %+v", got)
	}
	wantCLIAudited(t, db, audited, "cancel", 0)

	// The state filters and counts show CANCELLED.
	if n := len(listed(t, db, "-t", "orders", "--state", "cancelled")); n != 5 {
		t.Errorf("list --state cancelled lists %d tasks, want 5", n)
	}
	cancelByPrefix(t, db)
}

// cancelByPrefix is TestCancelCommand's --prefix on the database db, whose
// topic orders holds one ACTIVE task: a tenant of 1,203 tasks with
// identifiers of their own (more than a read and a transaction hold),
// one of them ACTIVE, beside identifiers that only look alike; % and _
// in a prefix match themselves.
func cancelByPrefix(t *testing.T, db string) {
	tenant := make([]string, 1203)
	for i := range tenant {
		tenant[i] = fmt.Sprintf("tenant-042/%04d", i)
	}
	must(t, db, "push", "-t", "orders", "tenant-0420/x", "tenant-04/x", "a%b/1", "axb/1")
	for chunk := range slices.Chunk(tenant, 400) {
		must(t, db, append([]string{"push", "-t", "orders"}, chunk...)...)
	}
	running := hold(t, db, "worker-3", "orders", 1) // tenant-0420/x, the oldest READY
	audited := len(cliAudit(t, db, "--limit", "1000"))
	got := decode[cancelJSON](t, must(t, db, "cancel", "orders", "--prefix", "tenant-042", "--reason", "tenant left", "--json"))
	if got.Tasks != 1203 || len(got.Running) != 1 || got.Running[0] != running[0].Sequence {
		t.Errorf("cancel --prefix tenant-042 cancelled %d tasks, running %v; want 1203 and task %d running", got.Tasks, got.Running, running[0].Sequence)
	}
	for _, c := range got.Cancelled {
		if !strings.HasPrefix(c.Identifier, "tenant-042/") || c.Was != "READY" {
			t.Errorf("cancel --prefix tenant-042 cancelled %+v", c)
		}
	}
	wantCLIAudited(t, db, audited, "cancel", 1203, `"prefix":"tenant-042"`, `"reason":"tenant left"`)
	if e := cliAudit(t, db, "--limit", "1")[0]; e.Bound != `the 1203 READY tasks of identifiers starting with "tenant-042" that it found` {
		t.Errorf("bound of cancel --prefix = %q", e.Bound)
	}
	out := must(t, db, "cancel", "orders", "--prefix", "a%")
	if !strings.Contains(out, "cancelled 1 task of orders") || !strings.Contains(out, "a%b/1") || strings.Contains(out, "axb/1") {
		t.Errorf("cancel --prefix a%% printed %q; want a%%b/1 alone", out)
	}
	wantStates(t, db, "orders", map[string]int64{"ACTIVE": 2, "CANCELLED": 1209, "READY": 2})
}

// wantLines fails t unless out has exactly the lines of want, each as
// its words: the columns of a table, whatever their widths.
func wantLines(t testing.TB, out string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Errorf("printed %d lines, want %d:\n%s", len(lines), len(want), out)
		return
	}
	for i, line := range lines {
		if got := strings.Join(strings.Fields(line), " "); got != want[i] {
			t.Errorf("line %d is %q, want %q:\n%s", i+1, got, want[i], out)
		}
	}
}
