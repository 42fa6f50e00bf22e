package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// decode decodes the JSON a command printed, failing t when it is not.
func decode[T any](t testing.TB, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return v
}

// states counts a topic's tasks per state, through taskctl count --json.
func states(t testing.TB, database, topic string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, r := range decode[[]countRow](t, must(t, database, "count", "-t", topic, "--json")) {
		got[r.State] = r.Count
	}
	return got
}

func wantStates(t testing.TB, database, topic string, want map[string]int64) {
	t.Helper()
	if got := states(t, database, topic); !mapsEqual(got, want) {
		t.Fatalf("counts of %s: %v, want %v", topic, got, want)
	}
}

func mapsEqual[K comparable, V comparable](x, y map[K]V) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// listed lists a topic's tasks through taskctl list --json.
func listed(t testing.TB, database string, args ...string) []taskJSON {
	t.Helper()
	return decode[[]taskJSON](t, must(t, database, append([]string{"list", "--json"}, args...)...))
}

func sequencesOf(tasks []taskJSON) []int64 {
	seqs := make([]int64, len(tasks))
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}

// TestOperatorWorkflow runs every command the way an operator would, on
// each backend, checking what each printed and what it changed.
func TestOperatorWorkflow(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			pushAndRead(t, db)
			settleAndCount(t, db)
			reviveReassignDefer(t, db)
			purgeAndResolve(t, db)
			topicsAndOwners(t, db)
		})
	}
}

// pushAndRead pushes from arguments, JSON lines and CSV, and reads the
// tasks back with list and show.
func pushAndRead(t *testing.T, db string) {
	if out := must(t, db, "topic", "init", "orders"); !strings.Contains(out, `added topic "orders"`) {
		t.Fatalf("topic init: %q", out)
	}
	r := decode[pushReport](t, must(t, db, "push", "-t", "orders", "a", "b", "c", "--input", `{"x":1}`, "--reference", "r1", "--json"))
	if r.Given != 3 || r.Pushed != 3 || r.Last-r.First < 2 {
		t.Fatalf("push: %+v", r)
	}
	lines := `{"identifier":"d","input":{"total":12},"not_before":"+1h"}` + "\n\n" + `{"identifier":"e","input":"plain text"}` + "\n"
	if out := taskctl(t, db, lines, "push", "-t", "orders", "--file", "-"); out.code != 0 || !strings.Contains(out.stdout, "pushed 2 of 2 tasks to orders") {
		t.Fatalf("push from stdin: %+v", out)
	}
	csvFile := filepath.Join(t.TempDir(), "tasks.csv")
	if err := os.WriteFile(csvFile, []byte("identifier,input,reference\nf,hello,r2\ng,\"a,b\",r2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, db, "push", "-t", "orders", "--file", csvFile)
	tasks := listed(t, db, "-t", "orders")
	var ids []string
	for _, task := range tasks {
		ids = append(ids, task.Identifier)
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d", "e", "f", "g"}) {
		t.Fatalf("list: identifiers %q", ids)
	}
	if tasks[0].Input != `{"x":1}` || tasks[0].Reference != "r1" || tasks[3].Input != `{"total":12}` ||
		tasks[4].Input != "plain text" || tasks[6].Input != "a,b" || tasks[6].Reference != "r2" {
		t.Fatalf("list: fields not stored as given: %+v", tasks)
	}
	if tasks[3].NotBefore == nil || time.Until(*tasks[3].NotBefore) < 50*time.Minute || tasks[0].NotBefore != nil {
		t.Fatalf("list: not_before %v of the deferred task, %v of another", tasks[3].NotBefore, tasks[0].NotBefore)
	}
	shown := decode[taskJSON](t, must(t, db, "show", fmt.Sprint(tasks[3].Sequence), "--json"))
	if shown.Identifier != "d" || shown.Topic != "orders" || shown.State != "READY" {
		t.Fatalf("show --json: %+v", shown)
	}
	text := must(t, db, "show", "-t", "orders", fmt.Sprint(tasks[3].Sequence))
	for _, want := range []string{"identifier  d", "state       READY", `"total": 12`, "in 59m"} {
		if !strings.Contains(text, want) {
			t.Fatalf("show: %q lacks %q", text, want)
		}
	}
	pageThrough(t, db, sequencesOf(tasks))
}

// pageThrough pages forward and backward two at a time and finds every
// task once, in order.
func pageThrough(t *testing.T, db string, all []int64) {
	var forward []int64
	page := listed(t, db, "-t", "orders", "--limit", "2")
	for len(page) > 0 {
		forward = append(forward, sequencesOf(page)...)
		page = listed(t, db, "-t", "orders", "--limit", "2", "--after", fmt.Sprint(forward[len(forward)-1]))
	}
	var backward []int64
	page = listed(t, db, "-t", "orders", "--limit", "2", "--backward")
	for len(page) > 0 {
		backward = append(backward, sequencesOf(page)...)
		page = listed(t, db, "-t", "orders", "--limit", "2", "--before", fmt.Sprint(backward[len(backward)-1]))
	}
	slices.Reverse(backward)
	if !slices.Equal(forward, all) || !slices.Equal(backward, all) {
		t.Fatalf("paging: forward %v, backward reversed %v, want %v", forward, backward, all)
	}
	if text := must(t, db, "list", "-t", "orders", "--limit", "2"); !strings.Contains(text, fmt.Sprintf("--after %d", all[1])) {
		t.Fatalf("list: no hint of the next page in %q", text)
	}
	if got := listed(t, db, "-t", "orders", "--since", "1h", "--until", "now"); len(got) != len(all) {
		t.Fatalf("list --since 1h --until now: %d tasks, want %d", len(got), len(all))
	}
	if got := listed(t, db, "-t", "orders", "--until", "1h"); len(got) != 0 {
		t.Fatalf("list --until 1h (an hour ago): %d tasks, want none", len(got))
	}
}

// settleAndCount completes tasks as a consumer would and checks count,
// results and the filters of list.
func settleAndCount(t *testing.T, db string) {
	settle(t, db, "test-consumer", "orders", 2, taskapi.Failure)
	settle(t, db, "test-consumer", "orders", 1, taskapi.Success)
	wantStates(t, db, "orders", map[string]int64{"READY": 4, "FAILED": 2, "SUCCEEDED": 1})
	text := must(t, db, "count")
	if !strings.Contains(text, "orders  FAILED") || !strings.Contains(text, "7 tasks") {
		t.Fatalf("count: %q", text)
	}
	res := decode[struct {
		Results []resultRow `json:"results"`
	}](t, must(t, db, "results", "--since", "10m", "--json"))
	got := map[string]int64{}
	for _, r := range res.Results {
		got[r.Topic+" "+r.Result] = r.Count
	}
	if !mapsEqual(got, map[string]int64{"orders FAILURE": 2, "orders SUCCESS": 1}) {
		t.Fatalf("results: %v", got)
	}
	if failed := listed(t, db, "-t", "orders", "--state", "failed"); len(failed) != 2 || failed[0].Output != "settled by the test" {
		t.Fatalf("list --state failed: %+v", failed)
	}
	if byID := listed(t, db, "-t", "orders", "--identifier", "f"); len(byID) != 1 || byID[0].Identifier != "f" {
		t.Fatalf("list --identifier f: %+v", byID)
	}
	if byRef := listed(t, db, "-t", "orders", "--reference", "r2"); len(byRef) != 2 {
		t.Fatalf("list --reference r2: %+v", byRef)
	}
}

// reviveReassignDefer revives the failures, reassigns one task by its
// sequence and defers one.
func reviveReassignDefer(t *testing.T, db string) {
	if out := must(t, db, "revive", "-t", "orders", "--state", "failed"); !strings.Contains(out, "revived 2 tasks of orders") {
		t.Fatalf("revive: %q", out)
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 6, "SUCCEEDED": 1})
	failed := settle(t, db, "test-consumer", "orders", 1, taskapi.Failure)
	must(t, db, "reassign", "-t", "orders", "--sequence", fmt.Sprint(failed[0].Sequence), "--result", "success")
	wantStates(t, db, "orders", map[string]int64{"READY": 5, "SUCCEEDED": 2})
	if out := must(t, db, "reassign", "-t", "orders", "--state", "succeeded", "--result", "filter"); !strings.Contains(out, "reassigned 2 tasks") {
		t.Fatalf("reassign --state: %q", out)
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 5, "FILTERED": 2})
	ready := listed(t, db, "-t", "orders", "--state", "ready", "--limit", "1")
	seq := fmt.Sprint(ready[0].Sequence)
	must(t, db, "defer", "-t", "orders", "--sequence", seq, "--for", "2h")
	if shown := decode[taskJSON](t, must(t, db, "show", seq, "--json")); shown.NotBefore == nil || time.Until(*shown.NotBefore) < time.Hour {
		t.Fatalf("defer --for 2h: not_before %v", shown.NotBefore)
	}
	if out := must(t, db, "defer", "-t", "orders", "--until", "now"); !strings.Contains(out, "deferred 5 tasks") {
		t.Fatalf("defer every READY task --until now: %q", out)
	}
	if shown := decode[taskJSON](t, must(t, db, "show", seq, "--json")); shown.NotBefore != nil && shown.NotBefore.After(time.Now()) {
		t.Fatalf("defer --until now: not_before %v still ahead", shown.NotBefore)
	}
}

// purgeAndResolve checks that --dry-run changes nothing, and purges by
// time and by state.
func purgeAndResolve(t *testing.T, db string) {
	before := states(t, db, "orders")
	if out := must(t, db, "purge", "-t", "orders", "--older-than", "0s", "--dry-run"); !strings.Contains(out, "would purge 2 tasks of orders") {
		t.Fatalf("purge --dry-run: %q", out)
	}
	for _, at := range []string{"now", "0s"} { // --before takes every form of a time README lists
		if out := must(t, db, "purge", "-t", "orders", "--before", at, "--dry-run"); !strings.Contains(out, "would purge 2 tasks of orders") {
			t.Fatalf("purge --before %s --dry-run: %q", at, out)
		}
	}
	dry := decode[map[string]changeReport](t, must(t, db, "purge", "-t", "orders", "--before", "2100-01-01", "--dry-run", "--json"))
	if dry["would_purge"] != (changeReport{Topic: "orders", Tasks: 2}) {
		t.Fatalf("purge --dry-run --json: %+v", dry)
	}
	if after := states(t, db, "orders"); !mapsEqual(before, after) {
		t.Fatalf("purge --dry-run changed the counts: %v, then %v", before, after)
	}
	wantExit(t, db, exitUsage, "pass --yes", "purge", "-t", "orders", "--older-than", "0s")
	if after := states(t, db, "orders"); !mapsEqual(before, after) {
		t.Fatalf("purge without --yes changed the counts: %v, then %v", before, after)
	}
	if out := must(t, db, "purge", "-t", "orders", "--before", "2000-01-01", "--yes"); !strings.Contains(out, "purged 0 tasks") {
		t.Fatalf("purge --before 2000: %q", out)
	}
	if out := must(t, db, "purge", "-t", "orders", "--older-than", "0s", "--yes"); !strings.Contains(out, "purged 2 tasks of orders") {
		t.Fatalf("purge --older-than 0s: %q", out)
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 5})
	last := listed(t, db, "-t", "orders", "--backward", "--limit", "1")[0].Sequence
	resolved := decode[struct{ Sequence int64 }](t, must(t, db, "resolve", "now", "--preceding", "--json"))
	if resolved.Sequence != last {
		t.Fatalf("resolve now --preceding: %d, want the last sequence %d", resolved.Sequence, last)
	}
	if out := must(t, db, "purge", "-t", "orders", "--state", "ready", "--to", fmt.Sprint(last-1), "--json", "--yes"); !strings.Contains(out, `"tasks": 4`) {
		t.Fatalf("purge --state ready --to: %q", out)
	}
	wantStates(t, db, "orders", map[string]int64{"READY": 1})
}

// topicsAndOwners pauses, drains and resumes a topic, lists owners and
// expires and purges them, and destroys the topic.
func topicsAndOwners(t *testing.T, db string) {
	must(t, db, "topic", "init", "other")
	must(t, db, "topic", "pause", "orders")
	must(t, db, "topic", "drain", "other")
	type topicRow struct{ Topic, Activation string }
	got := decode[[]topicRow](t, must(t, db, "topic", "list", "--json"))
	if !slices.Equal(got, []topicRow{{"orders", "PAUSED"}, {"other", "DRAINING"}}) {
		t.Fatalf("topic list: %+v", got)
	}
	must(t, db, "topic", "resume", "orders", "other")
	if text := must(t, db, "topic", "list"); !strings.Contains(text, "orders  RUNNING") {
		t.Fatalf("topic list after resume: %q", text)
	}
	// --within 1h: the commands since settle's heartbeat may take longer
	// than the default 30 s on a busy machine.
	owners := decode[[]ownerRow](t, must(t, db, "owners", "list", "--json", "--within", "1h"))
	if !slices.Equal(owners, []ownerRow{{Owner: "test-consumer", Alive: true}}) {
		t.Fatalf("owners list: %+v", owners)
	}
	if out := must(t, db, "expire", "--after", "1h"); !strings.Contains(out, "expired 0 tasks") {
		t.Fatalf("expire: %q", out)
	}
	if out := must(t, db, "owners", "purge", "--after", "1h"); !strings.Contains(out, "purged 0 owners") {
		t.Fatalf("owners purge: %q", out)
	}
	must(t, db, "topic", "destroy", "other", "--yes")
	if got := decode[[]topicRow](t, must(t, db, "topic", "list", "--json")); len(got) != 1 {
		t.Fatalf("topic list after destroy: %+v", got)
	}
}

// TestTopicCapacity sets, shows and removes a topic's capacity on each
// backend whose repository has capacities: topic list and --json show
// it, each change is audited with its capacity, and a push over it fails
// naming the topic, the capacity and the count, and pushes nothing.
func TestTopicCapacity(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			must(t, db, "topic", "init", "orders", "other")
			n := len(cliAudit(t, db))
			if out := must(t, db, "topic", "capacity", "orders"); !strings.Contains(out, "orders has no capacity") {
				t.Errorf("topic capacity of a topic without one: %q", out)
			}
			if out := must(t, db, "topic", "capacity", "orders", "2"); !strings.Contains(out, "orders has a capacity of 2 READY tasks") {
				t.Errorf("topic capacity orders 2: %q", out)
			}
			n = wantCLIAudited(t, db, n, "topic capacity", 1, `"topic":["orders"]`, `"capacity":2`)
			if got := decode[capacityReport](t, must(t, db, "topic", "capacity", "orders", "--json")); got.Capacity == nil || *got.Capacity != 2 {
				t.Errorf("topic capacity orders --json: %+v", got)
			}
			wantListedCapacities(t, db, map[string]int64{"orders": 2})
			if text := must(t, db, "topic", "list"); !strings.Contains(text, "CAPACITY") || !strings.Contains(text, "orders  RUNNING     2") || !strings.Contains(text, "other   RUNNING     -") {
				t.Errorf("topic list does not show the capacities:\n%s", text)
			}
			wantExit(t, db, exitFailure, `topic "orders" would hold 3 Ready tasks, over its capacity of 2`, "push", "-t", "orders", "a", "b", "c")
			wantStates(t, db, "orders", map[string]int64{})
			must(t, db, "push", "-t", "orders", "a", "b")
			wantExit(t, db, exitFailure, "over its capacity of 2", "push", "-t", "orders", "c")
			if out := must(t, db, "topic", "capacity", "orders", "0"); !strings.Contains(out, "orders has no capacity") {
				t.Errorf("topic capacity orders 0: %q", out)
			}
			wantCLIAudited(t, db, n, "topic capacity", 1, `"capacity":0`)
			wantListedCapacities(t, db, map[string]int64{})
			must(t, db, "push", "-t", "orders", "c")
			wantStates(t, db, "orders", map[string]int64{"READY": 3})

			// A bound per identifier: one identifier is refused, the others not.
			if out := must(t, db, "topic", "capacity", "other", "--per-identifier", "1"); !strings.Contains(out, "other has a capacity of 1 READY tasks per identifier") {
				t.Errorf("topic capacity other --per-identifier 1: %q", out)
			}
			wantExit(t, db, exitFailure, `identifier "a" of topic "other" would hold 2 Ready tasks, over its capacity of 1`, "push", "-t", "other", "a", "a")
			must(t, db, "push", "-t", "other", "a", "b")
			if out := must(t, db, "topic", "capacity", "other", "5"); !strings.Contains(out, "other has a capacity of 5 READY tasks, 1 per identifier") {
				t.Errorf("topic capacity other 5 keeps the bound per identifier: %q", out)
			}
			if got := decode[capacityReport](t, must(t, db, "topic", "capacity", "other", "--json")); got.PerIdentifier == nil || *got.PerIdentifier != 1 {
				t.Errorf("topic capacity other --json: %+v", got)
			}
			wantExit(t, db, exitUsage, `--per-identifier "-1"`, "topic", "capacity", "other", "--per-identifier", "-1")
		})
	}
}

// TestTopicLimits sets, shows and removes a topic's limits on each
// backend whose repository has limits: a flag not given keeps its limit,
// topic list and --json show them, each change is audited with both
// limits, and polls of every owner take no more than they allow.
func TestTopicLimits(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			must(t, db, "topic", "init", "orders", "other")
			n := len(cliAudit(t, db))
			if out := must(t, db, "topic", "limits", "orders"); !strings.Contains(out, "orders has no limits: its polls take any number of tasks") {
				t.Errorf("topic limits of a topic without any: %q", out)
			}
			wantLimitsSaid(t, db, "orders: at most 5 ACTIVE tasks across the fleet, at most 2 per identifier", "--active", "5", "--per-identifier", "2")
			n = wantCLIAudited(t, db, n, "topic limits", 1, `"topic":["orders"]`, `"active":5`, `"per-identifier":2`)
			wantLimitsSaid(t, db, "orders: at most 5 ACTIVE tasks across the fleet\n", "--per-identifier", "0")
			n = wantCLIAudited(t, db, n, "topic limits", 1, `"active":5`, `"per-identifier":0`)
			if got := decode[limitsReport](t, must(t, db, "topic", "limits", "orders", "--json")); got.Topic != "orders" || got.Active == nil || *got.Active != 5 || got.PerIdentifier != nil {
				t.Errorf("topic limits orders --json: %+v", got)
			}
			wantLimitsSaid(t, db, "orders: at most 2 ACTIVE tasks across the fleet, at most 1 per identifier", "--per-identifier", "1", "--active", "2")
			n = wantCLIAudited(t, db, n, "topic limits", 1, `"active":2`, `"per-identifier":1`)
			wantListedLimits(t, db, map[string]taskapi.Limits{"orders": {Active: 2, PerIdentifier: 1}})
			if text := must(t, db, "topic", "list"); !strings.Contains(text, "LIMITS") || !strings.Contains(text, "2 / 1 per id") || !strings.Contains(text, "other   RUNNING     -         -") {
				t.Errorf("topic list does not show the limits:\n%s", text)
			}
			wantLimitsObeyed(t, db)
			wantLimitsSaid(t, db, "orders has no limits", "--active", "0", "--per-identifier", "0")
			wantCLIAudited(t, db, n, "topic limits", 1, `"active":0`, `"per-identifier":0`)
			wantListedLimits(t, db, map[string]taskapi.Limits{})
		})
	}
}

// wantLimitsSaid sets the limits of orders with flags and fails t unless
// taskctl says want of them.
func wantLimitsSaid(t testing.TB, db, want string, flags ...string) {
	t.Helper()
	if out := must(t, db, append([]string{"topic", "limits", "orders"}, flags...)...); !strings.Contains(out, want) {
		t.Errorf("topic limits orders %s: %q, want %q in it", strings.Join(flags, " "), out, want)
	}
}

// wantLimitsObeyed polls orders, limited to 2 ACTIVE tasks and 1 per
// identifier, as two owners: the first takes the first task of each of
// two identifiers, the second none.
func wantLimitsObeyed(t testing.TB, db string) {
	t.Helper()
	must(t, db, "push", "-t", "orders", "a", "a", "b", "c")
	if got := pollUpTo(t, db, "owner-1", "orders", 10, nil); len(got) != 2 || got[0].Identifier != "a" || got[1].Identifier != "b" {
		t.Errorf("the first poll under the limits took %+v, want the first a and b", got)
	}
	if got := pollUpTo(t, db, "owner-2", "orders", 10, nil); len(got) != 0 {
		t.Errorf("another owner's poll at the limits took %d tasks", len(got))
	}
	wantStates(t, db, "orders", map[string]int64{"ACTIVE": 2, "READY": 2})
}

// wantListedLimits fails t unless topic list --json gives each topic the
// limits of want, and nulls to the others.
func wantListedLimits(t testing.TB, db string, want map[string]taskapi.Limits) {
	t.Helper()
	got := map[string]taskapi.Limits{}
	for _, r := range decode[[]topicRow](t, must(t, db, "topic", "list", "--json")) {
		if l := (taskapi.Limits{Active: deref(r.Limits.Active), PerIdentifier: deref(r.Limits.PerIdentifier)}); l != (taskapi.Limits{}) {
			got[r.Topic] = l
		}
	}
	if !mapsEqual(got, want) {
		t.Errorf("topic list --json: limits %v, want %v", got, want)
	}
}

// deref is *n, 0 for nil.
func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

// wantListedCapacities fails t unless topic list --json gives each topic
// the capacity of want, and null to the others.
func wantListedCapacities(t testing.TB, db string, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for _, r := range decode[[]topicRow](t, must(t, db, "topic", "list", "--json")) {
		if r.Capacity != nil {
			got[r.Topic] = *r.Capacity
		}
	}
	if !mapsEqual(got, want) {
		t.Errorf("topic list --json: capacities %v, want %v", got, want)
	}
}
