package conformance

import (
	"strconv"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testRead checks the read side: Page (both directions, cursors, filters, the
// calls that return nothing), Lookup, the fields of Info, Count (Total and
// Recent, filters, span, topic filter, empty and unregistered topics),
// Results by completion time, Resolve, and the PageAt and PurgeBefore
// helpers. Times come from the database clock (Info.Created and
// Info.Completed), never from time.Now.
func testRead[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb, tc = "alpha", "beta", "gamma"
	all := map[string]func(t *testing.T){}

	all["PageForward"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		s := w.pushIDs(ta, "a", "b")
		gap := w.pushIDs(tb, "x")[0]
		s = append(s, w.pushIDs(ta, "c", "d", "e")...)
		steps := []struct {
			cursor int64
			want   []taskapi.Task
		}{
			{taskapi.Inception, s[0:2]},
			{s[1].Sequence, s[2:4]},
			{gap.Sequence, s[2:4]}, // a cursor between the topic's tasks
			{s[3].Sequence, s[4:5]},
			{s[4].Sequence, nil},
		}
		for _, step := range steps {
			got := w.page(ta, taskapi.Listing{}, step.cursor, 2, taskapi.Forward)
			wantSeqs(t, "Page(FORWARD from "+cursorName(step.cursor)+", 2)", got, seqsOf(step.want...))
		}
		wantSeqs(t, "Page(FORWARD from inception, 100)", w.page(ta, taskapi.Listing{}, taskapi.Inception, 100, taskapi.Forward), seqsOf(s...))
	}

	all["PageBackward"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		s := w.pushIDs(ta, "a", "b")
		gap := w.pushIDs(tb, "x")[0]
		s = append(s, w.pushIDs(ta, "c", "d", "e")...)
		steps := []struct {
			cursor int64
			want   []int64
		}{
			{taskapi.MaxSequence, seqsOf(s[4], s[3])},
			{s[3].Sequence, seqsOf(s[2], s[1])},
			{gap.Sequence, seqsOf(s[1], s[0])},
			{s[1].Sequence, seqsOf(s[0])},
			{s[0].Sequence, nil},
		}
		for _, step := range steps {
			got := w.page(ta, taskapi.Listing{}, step.cursor, 2, taskapi.Backward)
			wantSeqs(t, "Page(BACKWARD from "+cursorName(step.cursor)+", 2)", got, step.want)
		}
	}

	all["PageReturnsNothing"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.pushIDs(ta, "a", "b")
		calls := []struct {
			what      string
			topic     string
			cursor    int64
			size      int
			direction taskapi.Direction
		}{
			{"size 0", ta, taskapi.Inception, 0, taskapi.Forward},
			{"size -1", ta, taskapi.MaxSequence, -1, taskapi.Backward},
			{"negative cursor forward", ta, -1, 10, taskapi.Forward},
			{"negative cursor backward", ta, -1, 10, taskapi.Backward},
			{"forward from MaxSequence", ta, taskapi.MaxSequence, 10, taskapi.Forward},
			{"backward from Inception", ta, taskapi.Inception, 10, taskapi.Backward},
			{"unknown topic forward", "nowhere", taskapi.Inception, 10, taskapi.Forward},
			{"unknown topic backward", "nowhere", taskapi.MaxSequence, 10, taskapi.Backward},
		}
		for _, c := range calls {
			wantSeqs(t, "Page("+c.what+")", w.page(c.topic, taskapi.Listing{}, c.cursor, c.size, c.direction), nil)
		}
	}

	all["PageFilters"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		a1 := w.taskWith(ta, taskapi.Creation{Identifier: "a", Reference: "r1"}, taskapi.Failed)
		b1 := w.taskWith(ta, taskapi.Creation{Identifier: "b", Reference: "r1"}, taskapi.Ready)
		a2 := w.taskWith(ta, taskapi.Creation{Identifier: "a", Reference: "r2"}, taskapi.Succeeded)
		b2 := w.taskWith(ta, taskapi.Creation{Identifier: "b"}, taskapi.Ready)
		w.taskWith(tb, taskapi.Creation{Identifier: "a", Reference: "r1"}, taskapi.Ready)
		filters := []struct {
			what    string
			listing taskapi.Listing
			want    []taskapi.Task
		}{
			{"no filter", taskapi.Listing{}, []taskapi.Task{a1, b1, a2, b2}},
			{"READY", taskapi.Listing{States: []taskapi.State{taskapi.Ready}}, []taskapi.Task{b1, b2}},
			{"FAILED, SUCCEEDED", taskapi.Listing{States: []taskapi.State{taskapi.Succeeded, taskapi.Failed}}, []taskapi.Task{a1, a2}},
			{"ACTIVE", taskapi.Listing{States: []taskapi.State{taskapi.Active}}, nil},
			{"reference r1", taskapi.Listing{Reference: "r1"}, []taskapi.Task{a1, b1}},
			{"identifier a", taskapi.Listing{Identifier: "a"}, []taskapi.Task{a1, a2}},
			{"identifier a, reference r2", taskapi.Listing{Identifier: "a", Reference: "r2"}, []taskapi.Task{a2}},
			{"READY, reference r1", taskapi.Listing{States: []taskapi.State{taskapi.Ready}, Reference: "r1"}, []taskapi.Task{b1}},
			{"identifier z", taskapi.Listing{Identifier: "z"}, nil},
		}
		for _, f := range filters {
			got := w.page(ta, f.listing, taskapi.Inception, 100, taskapi.Forward)
			wantSeqs(t, "Page("+f.what+")", got, seqsOf(f.want...))
		}
		// Filters combine with cursors in both directions.
		ready := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
		wantSeqs(t, "Page(READY, forward, 1)", w.page(ta, ready, taskapi.Inception, 1, taskapi.Forward), seqsOf(b1))
		wantSeqs(t, "Page(READY, forward from b1, 1)", w.page(ta, ready, b1.Sequence, 1, taskapi.Forward), seqsOf(b2))
		byA := taskapi.Listing{Identifier: "a"}
		wantSeqs(t, "Page(identifier a, backward, 1)", w.page(ta, byA, taskapi.MaxSequence, 1, taskapi.Backward), seqsOf(a2))
		wantSeqs(t, "Page(identifier a, backward from a2, 5)", w.page(ta, byA, a2.Sequence, 5, taskapi.Backward), seqsOf(a1))
	}

	all["InfoFields"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		done := w.taskWith(ta, taskapi.Creation{Identifier: "x", Input: "payload ✓", Reference: "ref-1"}, taskapi.Succeeded)
		ready := w.taskWith(ta, taskapi.Creation{Identifier: "y"}, taskapi.Ready)
		if ready.Input != "" || ready.Identifier != "y" {
			t.Errorf("Push returned %+v, want identifier y and no input", ready)
		}
		d := w.info(ta, done.Sequence)
		if d.Task != done || d.State != taskapi.Succeeded || d.Descent != taskapi.Ready ||
			d.Owner != Owner || d.Reference != "ref-1" || d.Output != "out-x" {
			t.Errorf("completed task info = %+v", d)
		}
		r := w.info(ta, ready.Sequence)
		if r.Task != ready || r.State != taskapi.Ready || r.Descent != taskapi.Ready ||
			r.Owner != "" || r.Reference != "" || r.Output != "" || !r.Completed.IsZero() {
			t.Errorf("ready task info = %+v", r)
		}
		for _, tm := range []struct {
			what string
			at   time.Time
		}{{"created", d.Created}, {"completed", d.Completed}, {"created", r.Created}} {
			if tm.at.IsZero() || tm.at.Location() != time.UTC {
				t.Errorf("%s time %v: want a non-zero time in UTC", tm.what, tm.at)
			}
		}
		if d.Completed.Before(d.Created) || r.Created.Before(d.Created) {
			t.Errorf("times out of order: created %v, completed %v, next created %v", d.Created, d.Completed, r.Created)
		}
		// Page returns the same Infos as Lookup.
		infos := w.all(ta)
		if len(infos) != 2 || !sameInfo(infos[0], d) || !sameInfo(infos[1], r) {
			t.Errorf("Page = %+v, want %+v and %+v", infos, d, r)
		}
	}

	all["Lookup"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		a := w.pushIDs(ta, "a")[0]
		x := w.pushIDs(tb, "x")[0]
		if info := w.info(ta, a.Sequence); info.Task != a || info.State != taskapi.Ready {
			t.Errorf("Lookup = %+v, want %+v, READY", info, a)
		}
		for _, c := range []struct {
			topic    string
			sequence int64
		}{
			{ta, x.Sequence}, // another topic's task
			{ta, x.Sequence + 100},
			{ta, taskapi.Inception},
			{ta, -1},
			{ta, taskapi.MaxSequence},
			{"nowhere", a.Sequence},
		} {
			info, ok, err := w.repo.Lookup(w.ctx, w.db, c.topic, c.sequence)
			if err != nil || ok || !sameInfo(info, taskapi.Info{}) {
				t.Errorf("Lookup(%q, %d) = %+v, %v, %v; want nothing", c.topic, c.sequence, info, ok, err)
			}
		}
	}

	all["CountTotal"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb, tc))
		s := countSet(w, ta, tb)
		type counts = map[string]map[taskapi.State]taskapi.Summary
		checks := []struct {
			what   string
			filter taskapi.Counting
			span   taskapi.Range
			want   counts
		}{
			{"everything", taskapi.Counting{}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(2, s.c2), taskapi.Ready: sumOf(2, s.b2), taskapi.Succeeded: sumOf(2, s.c1)},
				tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			{"FAILED", taskapi.Counting{States: []taskapi.State{taskapi.Failed}}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(2, s.c2)}, tb: {}, tc: {},
			}},
			{"FAILED, READY", taskapi.Counting{States: []taskapi.State{taskapi.Failed, taskapi.Ready}}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(2, s.c2), taskapi.Ready: sumOf(2, s.b2)}, tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			{"reference r1", taskapi.Counting{Reference: "r1"}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.a1), taskapi.Ready: sumOf(2, s.b2)}, tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			{"identifier a", taskapi.Counting{Identifier: "a"}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.a1), taskapi.Succeeded: sumOf(1, s.a2)}, tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			{"identifier a, SUCCEEDED", taskapi.Counting{Identifier: "a", States: []taskapi.State{taskapi.Succeeded}}, taskapi.Unbounded, counts{
				ta: {taskapi.Succeeded: sumOf(1, s.a2)}, tb: {}, tc: {},
			}},
			{"span b1..c1", taskapi.Counting{}, taskapi.Range{From: s.b1, To: s.c1}, counts{
				ta: {taskapi.Ready: sumOf(1, s.b1), taskapi.Succeeded: sumOf(2, s.c1)}, tb: {}, tc: {},
			}},
			{"span at inception", taskapi.Counting{}, taskapi.Range{From: taskapi.Inception, To: taskapi.Inception}, counts{
				ta: {}, tb: {}, tc: {},
			}},
			{"topic beta", taskapi.Counting{Topic: tb}, taskapi.Unbounded, counts{tb: {taskapi.Ready: sumOf(1, s.x1)}}},
		}
		for _, c := range checks {
			wantCount(t, "Count(TOTAL, "+c.what+")", w.count(taskapi.Total, c.filter, c.span), c.want)
		}
	}

	all["CountRecent"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb, tc))
		s := countSet(w, ta, tb)
		type counts = map[string]map[taskapi.State]taskapi.Summary
		checks := []struct {
			what   string
			filter taskapi.Counting
			span   taskapi.Range
			want   counts
		}{
			// The most recent tasks: a2 (SUCCEEDED), b2 (READY), c2 (FAILED);
			// in beta, x1 (READY), although it shares identifier a.
			{"everything", taskapi.Counting{}, taskapi.Unbounded, counts{
				ta: {taskapi.Succeeded: sumOf(1, s.a2), taskapi.Ready: sumOf(1, s.b2), taskapi.Failed: sumOf(1, s.c2)},
				tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			// The state filter applies to the most recent tasks: a1 is
			// FAILED but not the most recent of a, c1 SUCCEEDED but not of c.
			{"FAILED", taskapi.Counting{States: []taskapi.State{taskapi.Failed}}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.c2)}, tb: {}, tc: {},
			}},
			{"SUCCEEDED", taskapi.Counting{States: []taskapi.State{taskapi.Succeeded}}, taskapi.Unbounded, counts{
				ta: {taskapi.Succeeded: sumOf(1, s.a2)}, tb: {}, tc: {},
			}},
			// The span chooses the candidates first: c's most recent in it is c1.
			{"span a1..c1", taskapi.Counting{}, taskapi.Range{From: s.a1, To: s.c1}, counts{
				ta: {taskapi.Succeeded: sumOf(2, s.c1), taskapi.Ready: sumOf(1, s.b1)}, tb: {}, tc: {},
			}},
			// So do reference and identifier: with r1, a's candidate is a1.
			{"reference r1", taskapi.Counting{Reference: "r1"}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.a1), taskapi.Ready: sumOf(1, s.b2)}, tb: {taskapi.Ready: sumOf(1, s.x1)}, tc: {},
			}},
			{"reference r1, FAILED", taskapi.Counting{Reference: "r1", States: []taskapi.State{taskapi.Failed}}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.a1)}, tb: {}, tc: {},
			}},
			{"identifier c", taskapi.Counting{Identifier: "c"}, taskapi.Unbounded, counts{
				ta: {taskapi.Failed: sumOf(1, s.c2)}, tb: {}, tc: {},
			}},
			{"topic alpha", taskapi.Counting{Topic: ta}, taskapi.Unbounded, counts{
				ta: {taskapi.Succeeded: sumOf(1, s.a2), taskapi.Ready: sumOf(1, s.b2), taskapi.Failed: sumOf(1, s.c2)},
			}},
		}
		for _, c := range checks {
			wantCount(t, "Count(RECENT, "+c.what+")", w.count(taskapi.Recent, c.filter, c.span), c.want)
		}
	}

	all["CountTopics"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb, tc))
		type counts = map[string]map[taskapi.State]taskapi.Summary
		empty := counts{ta: {}, tb: {}, tc: {}}
		for _, snapshot := range []taskapi.Snapshot{taskapi.Total, taskapi.Recent} {
			wantCount(t, "Count("+snapshot.String()+") of empty topics", w.count(snapshot, taskapi.Counting{}, taskapi.Unbounded), empty)
		}
		x := w.pushIDs(tb, "x")[0]
		for _, snapshot := range []taskapi.Snapshot{taskapi.Total, taskapi.Recent} {
			name := snapshot.String()
			wantCount(t, "Count("+name+")", w.count(snapshot, taskapi.Counting{}, taskapi.Unbounded),
				counts{ta: {}, tb: {taskapi.Ready: sumOf(1, x.Sequence)}, tc: {}})
			wantCount(t, "Count("+name+", identifier nobody)", w.count(snapshot, taskapi.Counting{Identifier: "nobody"}, taskapi.Unbounded), empty)
			wantCount(t, "Count("+name+", topic gamma)", w.count(snapshot, taskapi.Counting{Topic: tc}, taskapi.Unbounded), counts{tc: {}})
			wantCount(t, "Count("+name+", topic beta)", w.count(snapshot, taskapi.Counting{Topic: tb}, taskapi.Unbounded),
				counts{tb: {taskapi.Ready: sumOf(1, x.Sequence)}})
			wantCount(t, "Count("+name+", unregistered topic)", w.count(snapshot, taskapi.Counting{Topic: "nowhere"}, taskapi.Unbounded), counts{})
		}
	}

	all["ResultsByCompletionTime"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		complete := func(results map[string]taskapi.Result) []taskapi.Info {
			ids := []string{}
			for _, id := range []string{"f", "s1", "s2", "p", "fi"} {
				if _, ok := results[id]; ok {
					ids = append(ids, id)
				}
			}
			pushed := w.pushIDs(ta, ids...)
			polled := w.poll(ta, len(ids))
			wantSeqs(t, "Poll", seqsOf(polled...), seqsOf(pushed...))
			completions := make([]taskapi.Completion, len(pushed))
			for i, task := range pushed {
				completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: results[task.Identifier]}}
			}
			w.must(w.repo.Complete(w.ctx, w.db, ta, completions...), "Complete")
			infos := make([]taskapi.Info, len(pushed))
			for i, task := range pushed {
				infos[i] = w.info(ta, task.Sequence)
			}
			return infos
		}
		batch1 := complete(map[string]taskapi.Result{"f": taskapi.Failure, "s1": taskapi.Success, "s2": taskapi.Success})
		time.Sleep(tick)
		batch2 := complete(map[string]taskapi.Result{"p": taskapi.Suspension, "fi": taskapi.Filter})
		time.Sleep(tick)
		w.task(ta, "e", taskapi.Expired)    // not completed
		w.task(ta, "re", taskapi.Recreated) // completed, then Recreated: not counted
		w.task(ta, "r", taskapi.Ready)
		first1, last1 := completedSpan(t, batch1)
		first2, last2 := completedSpan(t, batch2)
		if !last1.Before(first2) {
			t.Fatalf("the database clock did not move between the batches: %v, %v", last1, first2)
		}

		type results = map[string]map[taskapi.Result]int64
		one := results{ta: {taskapi.Failure: 1, taskapi.Success: 2}, tb: {}}
		two := results{ta: {taskapi.Suspension: 1, taskapi.Filter: 1}, tb: {}}
		both := results{ta: {taskapi.Failure: 1, taskapi.Success: 2, taskapi.Suspension: 1, taskapi.Filter: 1}, tb: {}}
		none := results{ta: {}, tb: {}}
		var zero time.Time
		zone := time.FixedZone("UTC+5", 5*3600)
		checks := []struct {
			what     string
			from, to time.Time
			want     results
		}{
			{"unbounded", zero, zero, both},
			{"first batch", first1, last1, one},
			{"first batch, other zone", first1.In(zone), last1.In(zone), one},
			{"up to the first batch", zero, last1, one},
			{"from the second batch", first2, zero, two},
			{"both batches", first1, last2, both},
			{"in the past", first1.Add(-2 * time.Hour), first1.Add(-time.Hour), none},
			{"in the future", last2.Add(time.Hour), zero, none},
		}
		for _, c := range checks {
			wantCount(t, "Results("+c.what+")", w.results(c.from, c.to), c.want)
		}
	}

	all["Resolve"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		tl := timeline(w, ta, tb)
		s := tl.seqs
		zone := time.FixedZone("UTC+5", 5*3600)
		checks := []struct {
			what      string
			at        time.Time
			preceding bool
			want      int64
		}{
			{"T1 following", tl.t1, false, s[0]},
			{"T1 preceding", tl.t1, true, s[0]},
			{"T2 following", tl.t2a, false, s[1]},
			{"T2 preceding", tl.t2b, true, s[2]},
			{"between T2 and T3 following (another topic)", tl.mid, false, s[3]},
			{"between T2 and T3 preceding", tl.mid, true, s[2]},
			{"T3 preceding (another topic)", tl.t3, true, s[3]},
			{"before everything preceding", tl.t1.Add(-time.Hour), true, taskapi.Inception},
			{"before everything following", tl.t1.Add(-time.Hour), false, s[0]},
			{"after everything following", tl.t4.Add(time.Hour), false, taskapi.MaxSequence},
			{"after everything preceding", tl.t4.Add(time.Hour), true, s[4]},
			{"T2 following, other zone", tl.t2a.In(zone), false, s[1]},
			{"between T2 and T3 preceding, other zone", tl.mid.In(zone), true, s[2]},
		}
		for _, c := range checks {
			if got := w.resolve(c.at, c.preceding); got != c.want {
				t.Errorf("Resolve(%s) = %d, want %d", c.what, got, c.want)
			}
		}
	}

	all["ResolveWithoutTasks"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		// Any time will do: there is no task at all.
		at := time.Now()
		if got := w.resolve(at, true); got != taskapi.Inception {
			t.Errorf("Resolve(preceding) = %d, want Inception", got)
		}
		if got := w.resolve(at, false); got != taskapi.MaxSequence {
			t.Errorf("Resolve(following) = %d, want MaxSequence", got)
		}
	}

	all["PageAt"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		tl := timeline(w, ta, tb)
		s := tl.seqs
		checks := []struct {
			what      string
			listing   taskapi.Listing
			at        time.Time
			size      int
			direction taskapi.Direction
			want      []int64
		}{
			{"forward at T2", taskapi.Listing{}, tl.t2a, 10, taskapi.Forward, []int64{s[1], s[2], s[4]}},
			{"backward at T2", taskapi.Listing{}, tl.t2b, 10, taskapi.Backward, []int64{s[2], s[1], s[0]}},
			{"forward between T2 and T3", taskapi.Listing{}, tl.mid, 10, taskapi.Forward, []int64{s[4]}},
			{"backward between T2 and T3", taskapi.Listing{}, tl.mid, 10, taskapi.Backward, []int64{s[2], s[1], s[0]}},
			{"forward at T1, size 2", taskapi.Listing{}, tl.t1, 2, taskapi.Forward, []int64{s[0], s[1]}},
			{"forward at T1, identifier c", taskapi.Listing{Identifier: "c"}, tl.t1, 10, taskapi.Forward, []int64{s[2]}},
			{"forward after everything", taskapi.Listing{}, tl.t4.Add(time.Hour), 10, taskapi.Forward, nil},
			{"backward before everything", taskapi.Listing{}, tl.t1.Add(-time.Hour), 10, taskapi.Backward, nil},
			{"forward before everything", taskapi.Listing{}, tl.t1.Add(-time.Hour), 10, taskapi.Forward, []int64{s[0], s[1], s[2], s[4]}},
			{"backward after everything", taskapi.Listing{}, tl.t4.Add(time.Hour), 10, taskapi.Backward, []int64{s[4], s[2], s[1], s[0]}},
		}
		for _, c := range checks {
			infos, err := taskapi.PageAt(w.ctx, w.repo, w.db, ta, c.listing, c.at, c.size, c.direction)
			w.must(err, "PageAt(%s)", c.what)
			wantSeqs(t, "PageAt("+c.what+")", infoSequences(infos), c.want)
		}
	}

	all["PurgeBefore"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		done1 := w.task(ta, "a", taskapi.Succeeded)
		ready := w.task(ta, "r", taskapi.Ready)
		other := w.task(tb, "o", taskapi.Succeeded)
		time.Sleep(tick)
		failed := w.task(ta, "f", taskapi.Failed)
		active := w.task(ta, "x", taskapi.Active)
		time.Sleep(tick)
		done2 := w.task(ta, "z", taskapi.Succeeded)
		created := func(task taskapi.Task) time.Time { return w.info(ta, task.Sequence).Created }
		purgeBefore := func(at time.Time) int64 {
			t.Helper()
			n, err := taskapi.PurgeBefore(w.ctx, w.repo, w.db, ta, at)
			w.must(err, "PurgeBefore(%v)", at)
			return n
		}

		wantN(t, "PurgeBefore(before everything)", purgeBefore(created(done1).Add(-time.Hour)), 0)
		wantN(t, "PurgeBefore(created of r)", purgeBefore(created(ready)), 1)
		w.missing(ta, done1.Sequence)
		w.wantState(ta, ready.Sequence, taskapi.Ready)
		wantN(t, "PurgeBefore(created of x)", purgeBefore(created(active)), 1)
		w.missing(ta, failed.Sequence)
		w.wantState(ta, active.Sequence, taskapi.Active)
		w.wantState(ta, done2.Sequence, taskapi.Succeeded)
		w.wantState(tb, other.Sequence, taskapi.Succeeded)
		wantN(t, "PurgeBefore(created of z)", purgeBefore(created(done2)), 1)
		wantSeqs(t, "remaining tasks", infoSequences(w.all(ta)), seqsOf(ready, active))
		w.wantState(tb, other.Sequence, taskapi.Succeeded)
	}

	cases(t, all)
}

// countTasks are the sequences of the tasks countSet makes.
type countTasks struct {
	a1, b1, a2, c1, b2, c2, x1 int64
}

// countSet makes, in topic, a1 (identifier a, reference r1, FAILED), b1 (b,
// r1, READY), a2 (a, r2, SUCCEEDED), c1 (c, r2, SUCCEEDED), b2 (b, r1,
// READY), c2 (c, no reference, FAILED), then in other x1 (a, r1, READY).
func countSet[Tx any](w *world[Tx], topic, other string) countTasks {
	w.t.Helper()
	mk := func(topic, id, ref string, state taskapi.State) int64 {
		w.t.Helper()
		return w.taskWith(topic, taskapi.Creation{Identifier: id, Reference: ref}, state).Sequence
	}
	var s countTasks
	s.a1 = mk(topic, "a", "r1", taskapi.Failed)
	s.b1 = mk(topic, "b", "r1", taskapi.Ready)
	s.a2 = mk(topic, "a", "r2", taskapi.Succeeded)
	s.c1 = mk(topic, "c", "r2", taskapi.Succeeded)
	s.b2 = mk(topic, "b", "r1", taskapi.Ready)
	s.c2 = mk(topic, "c", "", taskapi.Failed)
	s.x1 = mk(other, "a", "r1", taskapi.Ready)
	return s
}

// timeLine holds the tasks timeline makes and their creation times.
type timeLine struct {
	seqs                 []int64 // s1 .. s5
	t1, t2a, t2b, t3, t4 time.Time
	mid                  time.Time // halfway between t2b and t3
}

// timeline pushes, with pauses in between: s1 (a) to topic; s2 (b) and s3
// (c) to topic in one push; s4 (x) to other; s5 (d) to topic. It returns the
// sequences and creation times as the database recorded them.
func timeline[Tx any](w *world[Tx], topic, other string) timeLine {
	w.t.Helper()
	var tasks []taskapi.Task
	tasks = append(tasks, w.pushIDs(topic, "a")...)
	time.Sleep(tick)
	tasks = append(tasks, w.pushIDs(topic, "b", "c")...)
	time.Sleep(tick)
	tasks = append(tasks, w.pushIDs(other, "x")...)
	time.Sleep(tick)
	tasks = append(tasks, w.pushIDs(topic, "d")...)
	topics := []string{topic, topic, topic, other, topic}
	times := make([]time.Time, len(tasks))
	for i, task := range tasks {
		times[i] = w.info(topics[i], task.Sequence).Created
	}
	tl := timeLine{
		seqs: seqsOf(tasks...),
		t1:   times[0], t2a: times[1], t2b: times[2], t3: times[3], t4: times[4],
	}
	if !tl.t1.Before(tl.t2a) || tl.t2b.Before(tl.t2a) || !tl.t2b.Before(tl.t3) || !tl.t3.Before(tl.t4) {
		w.t.Fatalf("the database clock did not move between the pushes: %v", times)
	}
	tl.mid = tl.t2b.Add(tl.t3.Sub(tl.t2b) / 2)
	return tl
}

// completedSpan returns the earliest and latest completion time of infos.
func completedSpan(t *testing.T, infos []taskapi.Info) (first, last time.Time) {
	t.Helper()
	for i, info := range infos {
		if info.Completed.IsZero() {
			t.Fatalf("task %d has no completion time", info.Sequence)
		}
		if i == 0 || info.Completed.Before(first) {
			first = info.Completed
		}
		if i == 0 || info.Completed.After(last) {
			last = info.Completed
		}
	}
	return first, last
}

// cursorName formats a sequence for a message.
func cursorName(n int64) string {
	switch n {
	case taskapi.MaxSequence:
		return "MaxSequence"
	case taskapi.Inception:
		return "Inception"
	}
	return strconv.FormatInt(n, 10)
}

// sumOf builds a Summary.
func sumOf(count, bound int64) taskapi.Summary {
	return taskapi.Summary{Count: count, Bound: bound}
}
