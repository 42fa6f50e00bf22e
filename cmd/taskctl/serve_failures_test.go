package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// failNew pushes one task of identifier to topic and fails it with
// output (topic holds no other READY task); it returns the task.
func failNew(t *testing.T, s store, topic, identifier, output string) taskapi.Task {
	t.Helper()
	if _, err := s.Initialize(t.Context(), topic); err != nil {
		t.Fatal(err)
	}
	tasks, err := s.Push(t.Context(), topic, taskapi.Append, []taskapi.Creation{{Identifier: identifier}})
	if err != nil {
		t.Fatal(err)
	}
	failWith(t, s, "worker", topic, output)
	time.Sleep(2 * time.Millisecond) // completion times apart
	return tasks[0]
}

// buttonLinks returns the links of the buttons of class in the part of
// page from after to the end of its table row, unescaped.
func buttonLinks(t *testing.T, page, after, class string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(page, after)
	if !ok {
		t.Fatalf("the page does not show %q:\n%s", after, page)
	}
	rest, _, _ = strings.Cut(rest, "</tr>")
	var links []string
	re := regexp.MustCompile(`<a class="button ` + class + `" href="([^"]*)"`)
	for _, m := range re.FindAllStringSubmatch(rest, -1) {
		links = append(links, html.UnescapeString(m[1]))
	}
	return links
}

// stateOf reads the state of a task; gone is "GONE".
func stateOf(t *testing.T, s store, topic string, seq int64) string {
	t.Helper()
	info, ok, err := s.Lookup(t.Context(), topic, seq)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "GONE"
	}
	return info.State.String()
}

// wantTaskStates fails t unless the tasks of topic are in the states of want.
func wantTaskStates(t *testing.T, s store, topic string, want map[int64]string) {
	t.Helper()
	for seq, state := range want {
		if got := stateOf(t, s, topic, seq); got != state {
			t.Errorf("task %d of %q is %s, want %s", seq, topic, got, state)
		}
	}
}

// TestServeFailures lists FAILED and SUSPENDED tasks of every topic on
// SQLite and PostgreSQL: newest first by the time they finished, with the
// last error from taskproc's attempt log or the output, escaped, grouped
// by error text with counts and topics; SUCCEEDED tasks are not listed.
func TestServeFailures(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			database := b.url(t)
			d := startDashboard(t, database, web.Config{Refresh: 100 * time.Millisecond})
			br := newBrowser(t, d.url)
			at := time.Now().UTC().Add(-time.Minute)
			o1 := failNew(t, d.store, "orders", "order-1", "connection refused")
			m1 := failNew(t, d.store, "mail", "mail-1", attemptLog(t,
				taskproc.Attempt{Number: 1, At: at, Error: "smtp busy"},
				taskproc.Attempt{Number: 2, At: at, Error: "connection refused"}))
			o2 := failNew(t, d.store, "orders", "order-2", `<script>alert("x")</script>`)
			o3 := failNew(t, d.store, "orders", "order-3", "connection\n  refused")
			ok := failNew(t, d.store, "mail", "mail-2", "connection refused")
			if err := d.store.Reassign(t.Context(), "mail", []taskapi.Assignment{{Task: ok, Result: taskapi.Success}}); err != nil {
				t.Fatal(err) // SUCCEEDED: not a failure
			}
			if _, err := d.store.Push(t.Context(), "mail", taskapi.Append, []taskapi.Creation{{Identifier: "held", Suspended: true}}); err != nil {
				t.Fatal(err)
			}

			page := br.page("/failures")
			if strings.Contains(page, `<script>alert`) || !strings.Contains(page, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`) {
				t.Errorf("the hostile error is not escaped:\n%s", page)
			}
			if !strings.Contains(page, "grouped by their last error: all 5.") {
				t.Errorf("the page does not say how many it groups:\n%s", page)
			}
			_, listed, _ := strings.Cut(page, `id="failures"`)
			var order []string
			for _, m := range regexp.MustCompile(`seq=(\d+)">`).FindAllStringSubmatch(listed, -1) {
				order = append(order, m[1])
			}
			held := tasksOf(t, d.store, "mail")[2].Sequence
			want := []string{fmt.Sprint(held), fmt.Sprint(o3.Sequence), fmt.Sprint(o2.Sequence), fmt.Sprint(m1.Sequence), fmt.Sprint(o1.Sequence)}
			if !slices.Equal(order, want) {
				t.Errorf("failures listed in the order %v, want newest first %v", order, want)
			}
			_, groups, _ := strings.Cut(page, `id="groups"`)
			groups, _, _ = strings.Cut(groups, "</table>")
			row := regexp.MustCompile(`<td class="num">(\d+)</td>\s*<td class="text error">([^<]*)</td>`)
			got := map[string]string{}
			for _, m := range row.FindAllStringSubmatch(groups, -1) {
				got[html.UnescapeString(m[2])] = m[1]
			}
			wantGroups := map[string]string{"connection refused": "3", `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`: "1", "(no output)": "1"}
			for text, n := range wantGroups {
				if got[html.UnescapeString(text)] != n {
					t.Errorf("group %q counts %s, want %s (groups: %v)", text, got[html.UnescapeString(text)], n, got)
				}
			}
			if links := buttonLinks(t, page, "connection refused</td>", "revive"); len(links) != 2 {
				t.Errorf("the group of two topics has %d revive links, want one per topic: %v", len(links), links)
			}

			only := br.page("/failures?topic=mail&state=SUSPENDED")
			if strings.Contains(only, "connection refused") || !strings.Contains(only, "(no output)") {
				t.Errorf("the failures of mail, SUSPENDED only, are wrong:\n%s", only)
			}
			ro := startDashboard(t, database, web.Config{Refresh: 100 * time.Millisecond, ReadOnly: true})
			if page := newBrowser(t, ro.url).page("/failures"); strings.Contains(page, "/action/") || !strings.Contains(page, "connection refused") {
				t.Errorf("a read-only dashboard's failures page offers actions, or lists nothing:\n%s", page)
			}
			if r := br.get("/failures?state=READY"); r.status != http.StatusBadRequest {
				t.Errorf("/failures?state=READY: %d, want 400", r.status)
			}
			if r := br.get("/failures?topic=nowhere"); r.status != http.StatusNotFound {
				t.Errorf("/failures?topic=nowhere: %d, want 404", r.status)
			}
		})
	}
}

// TestServeFailureGroupActions runs the actions of a group of the failures
// page, each through its confirmation, with tasks failing, and changing,
// between the confirmation and the POST: a revive revives the group's
// tasks of the topic and no other (not one that failed the same way
// since); a purge deletes the group's tasks still in the state they were
// confirmed in (not one revived since); a deferral revives them in place
// and holds them back, and is refused, changing nothing, when one of them
// changed state since its confirmation.
func TestServeFailureGroupActions(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			br := newBrowser(t, d.url)
			a1 := failNew(t, d.store, "orders", "a1", "disk full")
			a2 := failNew(t, d.store, "orders", "a2", "disk full")
			other := failNew(t, d.store, "orders", "b1", "bad input")

			// Revive: a task failing the same way after the page was read
			// is not in the group.
			revive := buttonLinks(t, br.page("/failures"), "disk full</td>", "revive")
			late := failNew(t, d.store, "orders", "a3", "disk full")
			done := act(t, br, revive[0], "2 tasks would be made READY")
			if !strings.Contains(done, "revived 2 tasks") {
				t.Errorf("the revival says:\n%s", done)
			}
			wantTaskStates(t, d.store, "orders", map[int64]string{a1.Sequence: "READY", a2.Sequence: "READY",
				late.Sequence: "FAILED", other.Sequence: "FAILED"})

			// Purge: fail a1 and a2 again (the READY heads: FIFO), confirm
			// the group's purge, revive a1 meanwhile.
			failWith(t, d.store, "worker", "orders", "disk full")
			failWith(t, d.store, "worker", "orders", "disk full")
			purge := buttonLinks(t, br.page("/failures"), "disk full</td>", "purge")
			confirm := br.page(purge[0])
			if !strings.Contains(confirm, "3 tasks would be deleted for good") {
				t.Fatalf("the purge's confirmation:\n%s", confirm)
			}
			if _, err := d.store.ReviveTasks(t.Context(), "orders", taskapi.ReviveReset, []taskapi.Task{a1}); err != nil {
				t.Fatal(err)
			}
			r := br.post("/action/purge", confirmForm(t, confirm))
			if r.status != http.StatusOK || !strings.Contains(r.body, "deleted 2 tasks") {
				t.Errorf("the purge: %d\n%s", r.status, r.body)
			}
			wantTaskStates(t, d.store, "orders", map[int64]string{a1.Sequence: "READY", a2.Sequence: "GONE",
				late.Sequence: "GONE", other.Sequence: "FAILED"})

			// Defer: the group (bad input) revived in place, not polled
			// for two hours.
			retry := buttonLinks(t, br.page("/failures"), "bad input</td>", "retry")
			done = act(t, br, retry[0]+"&for=2h", "1 task would be made READY again in place")
			if !strings.Contains(done, "1 task not polled before") {
				t.Errorf("the deferral says:\n%s", done)
			}
			if info, _, _ := d.store.Lookup(t.Context(), "orders", other.Sequence); info.State != taskapi.Ready || time.Until(info.NotBefore) < time.Hour {
				t.Errorf("the deferred task is %s, due at %v; want READY in two hours", info.State, info.NotBefore)
			}

			// A deferral whose task changed since its confirmation leaves
			// it as it is, and says so.
			failWith(t, d.store, "worker", "orders", "late again") // a1
			retry = buttonLinks(t, br.page("/failures"), "late again</td>", "retry")
			confirm = br.page(retry[0] + "&for=1h")
			if err := d.store.Reassign(t.Context(), "orders", []taskapi.Assignment{{Task: a1, Result: taskapi.Success}}); err != nil {
				t.Fatal(err)
			}
			if r := br.post("/action/retry", confirmForm(t, confirm)); r.status != http.StatusOK ||
				!strings.Contains(r.body, fmt.Sprintf("skipped task %d: it is SUCCEEDED now, not FAILED as confirmed", a1.Sequence)) {
				t.Errorf("a deferral of a task that changed since: %d, want 200 naming the task skipped\n%s", r.status, r.body)
			}
			wantTaskStates(t, d.store, "orders", map[int64]string{a1.Sequence: "SUCCEEDED"})

			// The audit log has the actions that ran, newest first, with
			// what each changed: the last deferral changed nothing.
			log, err := d.store.AuditLog(t.Context(), 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range log {
				got = append(got, fmt.Sprintf("%s %d", e.Action, e.Changed))
			}
			if want := []string{"retry 0", "retry 1", "purge 2", "revive 2"}; !slices.Equal(got, want) {
				t.Errorf("the audit log holds %q, want %q", got, want)
			}
		})
	}
}

// TestServeFailuresSpread spreads the newest failures over 90 topics, more
// than the failures page read when it stopped at 80 reads: it groups them
// all, and lists them, and a page of one topic shows that topic's.
func TestServeFailuresSpread(t *testing.T) {
	// A read timeout of a minute: the page stops at three quarters of it,
	// and on a loaded machine the default's cut the 90 reads short.
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: time.Hour, ReadTimeout: time.Minute})
	br := newBrowser(t, d.url)
	var seqs []int64
	for i := range 90 {
		seqs = append(seqs, failNew(t, d.store, fmt.Sprintf("t%02d", i), "x", "boom").Sequence)
	}
	page := br.page("/failures")
	if !strings.Contains(page, "grouped by their last error: all 90.") || !strings.Contains(page, `<td class="num">90</td>`) {
		t.Fatalf("the page does not group all 90:\n%s", page)
	}
	for i, seq := range seqs {
		if !strings.Contains(page, fmt.Sprintf("seq=%d\">", seq)) {
			t.Errorf("task %d (topic %d) is not listed", seq, i)
		}
	}
	if one := br.page("/failures?topic=t00"); !strings.Contains(one, "grouped by their last error: all 1.") {
		t.Errorf("the page of one topic:\n%s", one)
	}
}

// TestServeFailureGroupCancel cancels the SUSPENDED tasks of a group of
// the failures page, on SQLite and PostgreSQL: the group's FAILED task
// is left, having ended; the confirmation names the error and the count,
// and a task that left the group between the confirmation and the POST
// (revived, and suspended again with another error) is left as it is.
// It failed on the old code: a group had no Cancel.
func TestServeFailureGroupCancel(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond})
			br := newBrowser(t, d.url)
			s1 := failNew(t, d.store, "orders", "s1", "out of stock")
			s2 := failNew(t, d.store, "orders", "s2", "out of stock")
			f1 := failNew(t, d.store, "orders", "f1", "out of stock")
			suspend := func(tasks ...taskapi.Task) {
				t.Helper()
				for _, task := range tasks {
					if err := d.store.Reassign(t.Context(), "orders", []taskapi.Assignment{{Task: task, Result: taskapi.Suspension}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			suspend(s1, s2)
			cancel := buttonLinks(t, br.page("/failures"), "out of stock</td>", "cancel")
			if len(cancel) != 1 {
				t.Fatalf("the group has %d cancel links, want 1", len(cancel))
			}
			confirm := br.page(cancel[0])
			if !strings.Contains(confirm, `2 tasks of &#34;orders&#34; whose last error is «out of stock»`) {
				t.Fatalf("the confirmation does not name the group's error and count:\n%s", confirm)
			}
			if _, err := d.store.ReviveTasks(t.Context(), "orders", taskapi.ReviveReset, []taskapi.Task{s2}); err != nil {
				t.Fatal(err)
			}
			failWith(t, d.store, "worker", "orders", "supplier gone")
			suspend(s2)
			r := br.post("/action/cancel", confirmForm(t, confirm))
			if r.status != http.StatusOK || !strings.Contains(r.body, "cancelled 1 task of") ||
				!strings.Contains(r.body, fmt.Sprintf("skipped task %d: its last error is «supplier gone» now", s2.Sequence)) {
				t.Errorf("the group's cancellation: %d\n%s", r.status, r.body)
			}
			wantTaskStates(t, d.store, "orders", map[int64]string{s1.Sequence: "CANCELLED", s2.Sequence: "SUSPENDED", f1.Sequence: "FAILED"})
		})
	}
}

// TestServeFailureGroupWhole revives a whole error group (issue 42: the
// failures page grouped the newest 1,000 failures, and reviving "pq:
// duplicate" again and again revived 217, 42, 7 and 2 tasks while 501 of
// its 769 stayed FAILED): 769 tasks of one error, its text in an attempt
// log's JSON with its quotes escaped, among 10,000 failures on
// PostgreSQL. The page groups all 10,000, the group counts 769, and its
// revive, whose confirmation names the error and the count, revives them
// all, and no other; the group's link to every task of its error finds
// the same 769 in one search. A group of 1,318 is revived whole by one
// action too.
func TestServeFailureGroupWhole(t *testing.T) {
	t.Parallel()
	// The page reads for three quarters of its read timeout: under the
	// race detector, beside the other tests, 10,000 failures take longer
	// than the default's 1.5 s. What the page groups in its time is the
	// million-task heavy test's; this one is about what the groups do.
	d := startDashboard(t, postgresURL(t), web.Config{Refresh: 100 * time.Millisecond, ReadTimeout: time.Minute})
	const failures, duplicates = 10_000, 769
	const dup = `pq: duplicate key value violates unique constraint "orders_pkey"`
	outputs := make([]string, failures)
	for i := range outputs {
		outputs[i] = fmt.Sprintf("panic: runtime error: index out of range [%d]", i%7)
		if i%13 == 0 && i/13 < duplicates {
			outputs[i] = attemptLog(t, taskproc.Attempt{Number: 3, At: time.Now().UTC(), Error: dup})
		}
	}
	seqs := failAll(t, d.store, "orders", outputs)
	br := newBrowser(t, d.url)
	page := br.page("/failures")
	const shown = "pq: duplicate key value violates unique constraint &#34;orders_pkey&#34;"
	if !strings.Contains(page, "grouped by their last error: all 10,000.") || !strings.Contains(page, `<td class="num">769</td>
<td class="text error">`+shown) {
		meta := regexp.MustCompile(`(?s)<p class="meta" id="failures-meta">.*?</p>`).FindString(page)
		t.Fatalf("the failures page does not group all 10,000 failures, or not the 769 of the duplicate key together: %s", meta)
	}
	_, group, _ := strings.Cut(page, shown)
	every := regexp.MustCompile(`<a class="every" href="([^"]+)"`).FindStringSubmatch(group)
	if every == nil {
		t.Fatalf("the group has no link to its every task:\n%s", group)
	}
	if found := br.page(html.UnescapeString(every[1])); !strings.Contains(found, "769 tasks found") {
		t.Fatalf("the search of every task of the error does not find 769:\n%s", found)
	}
	revive := buttonLinks(t, page, shown, "revive")
	confirm := `769 tasks of &#34;orders&#34; whose last error is «` + shown + `», selected by sequence:`
	if done := act(t, br, revive[0], confirm); !strings.Contains(done, "revived 769 tasks") {
		t.Errorf("the revival of the group says:\n%s", done)
	}
	// A group of more than a thousand tasks of the topic is revived
	// whole too: one action names up to 10,000 tasks.
	const three = "panic: runtime error: index out of range [3]"
	threes := int64(strings.Count(strings.Join(outputs, "\n"), three))
	revive = buttonLinks(t, br.page("/failures"), three+"</td>", "revive")
	thousands := fmt.Sprintf("%d,%03d", threes/1000, threes%1000) // how the pages write it
	confirm = fmt.Sprintf(`%s tasks of &#34;orders&#34; whose last error is «%s», selected by sequence:`, thousands, three)
	if done := act(t, br, revive[0], confirm); !strings.Contains(done, fmt.Sprintf("revived %s tasks", thousands)) {
		t.Errorf("the revival of the group of %d says:\n%s", threes, done)
	}
	want := map[taskapi.State]int64{taskapi.Ready: duplicates + threes, taskapi.Failed: failures - duplicates - threes}
	wantCounts(t, d.store, "orders", want)
	for i, seq := range seqs {
		revived := strings.Contains(outputs[i], "duplicate") || outputs[i] == three
		if revived != (stateOf(t, d.store, "orders", seq) == "READY") {
			t.Fatalf("task %d (%s) is %s after the groups' revivals", seq, outputs[i], stateOf(t, d.store, "orders", seq))
		}
	}
}

// failOldest fails the n oldest READY tasks of topic on a PostgreSQL
// store, a thousand to a transaction, through owner, each with the output
// outputOf gives for its sequence.
func failOldest(t testing.TB, s store, owner, topic string, n int, outputOf func(seq int64) string) {
	t.Helper()
	if err := failOldestIn(t.Context(), s, owner, topic, n, outputOf); err != nil {
		t.Fatal(err)
	}
}

// failOldestIn is failOldest, returning its error.
func failOldestIn(ctx context.Context, s store, owner, topic string, n int, outputOf func(seq int64) string) error {
	b, ok := s.(*backend[taskpg.DB])
	if !ok {
		return fmt.Errorf("failOldest takes a PostgreSQL store, not %T", s)
	}
	repo, err := b.newRepo(owner)
	if err == nil {
		_, err = repo.Register(ctx, b.db)
	}
	for done := 0; err == nil && done < n; done += 1000 {
		err = b.transact(ctx, func(tx taskpg.DB) error {
			polled, err := repo.Poll(ctx, tx, topic, min(1000, n-done))
			if err != nil {
				return err
			}
			completions := make([]taskapi.Completion, len(polled))
			for i, task := range polled {
				completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: outputOf(task.Sequence)}}
			}
			return repo.Complete(ctx, tx, topic, completions...)
		})
	}
	return err
}

// failAll pushes a task of topic per output and fails each with its
// output, through an owner of the test's own; it returns their sequences.
func failAll(t *testing.T, s store, topic string, outputs []string) []int64 {
	t.Helper()
	if _, err := s.Initialize(t.Context(), topic); err != nil {
		t.Fatal(err)
	}
	creations := make([]taskapi.Creation, len(outputs))
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("order-%05d", i)}
	}
	tasks, err := s.Push(t.Context(), topic, taskapi.Append, creations)
	if err != nil {
		t.Fatal(err)
	}
	output := make(map[int64]string, len(tasks))
	for i, task := range tasks {
		output[task.Sequence] = outputs[i]
	}
	failOldest(t, s, "bulk-failer", topic, len(tasks), func(seq int64) string { return output[seq] })
	seqs := make([]int64, len(tasks))
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}
