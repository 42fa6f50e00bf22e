package conformance

import (
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testReadyReads checks Page and Count with a filter on READY alone, which
// an implementation may serve from its indexes of READY tasks: deferred
// READY tasks (due or not) and READY tasks never deferred are listed
// together in sequence order, in both directions, from any cursor, with
// the identifier and reference filters and ranges, and counted together;
// tasks in other states never are.
func testReadyReads[Tx any](t *testing.T, b Backend[Tx]) {
	const ta = "alpha"
	all := map[string]func(t *testing.T){}

	all["DeferredAndDueTogether"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, "beta"))
		var ready []taskapi.Task
		for i, c := range []taskapi.Creation{
			{Identifier: "a", Reference: "r1"},
			{Identifier: "b", NotBefore: time.Now().Add(time.Hour)},
			{Identifier: "a", NotBefore: time.Now().Add(-time.Hour), Reference: "r1"},
			{Identifier: "c"},
			{Identifier: "a", NotBefore: time.Now().Add(2 * time.Hour)},
			{Identifier: "b"},
		} {
			ready = append(ready, w.taskWith(ta, c, taskapi.Ready))
			if i%2 == 1 { // finished tasks between them are never listed
				w.taskWith(ta, taskapi.Creation{Identifier: "a", Reference: "r1"}, taskapi.Failed)
			}
		}
		w.taskWith("beta", taskapi.Creation{Identifier: "a"}, taskapi.Ready)
		only := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
		seqs := seqsOf(ready...)
		backward := slices.Clone(seqs)
		slices.Reverse(backward)
		wantSeqs(t, "Page(READY)", w.page(ta, only, taskapi.Inception, 100, taskapi.Forward), seqs)
		wantSeqs(t, "Page(READY, backward)", w.page(ta, only, taskapi.MaxSequence, 100, taskapi.Backward), backward)
		wantSeqs(t, "Page(READY, 2 from the second)", w.page(ta, only, seqs[1], 2, taskapi.Forward), seqs[2:4])
		wantSeqs(t, "Page(READY, backward, 2 from the fifth)", w.page(ta, only, seqs[4], 2, taskapi.Backward), []int64{seqs[3], seqs[2]})
		byA := taskapi.Listing{States: only.States, Identifier: "a"}
		wantSeqs(t, "Page(READY, identifier a)", w.page(ta, byA, taskapi.Inception, 100, taskapi.Forward), seqsOf(ready[0], ready[2], ready[4]))
		byR1 := taskapi.Listing{States: only.States, Reference: "r1"}
		wantSeqs(t, "Page(READY, reference r1)", w.page(ta, byR1, taskapi.Inception, 100, taskapi.Forward), seqsOf(ready[0], ready[2]))

		counting := taskapi.Counting{States: only.States}
		wantCount(t, "Count(READY)", w.count(taskapi.Total, counting, taskapi.Unbounded), map[string]map[taskapi.State]taskapi.Summary{
			ta: {taskapi.Ready: {Count: 6, Bound: seqs[5]}}, "beta": {taskapi.Ready: {Count: 1, Bound: w.page("beta", only, taskapi.Inception, 1, taskapi.Forward)[0]}},
		})
		counting.Topic, counting.Identifier = ta, "a"
		span := taskapi.Range{From: seqs[1], To: seqs[4]}
		wantCount(t, "Count(READY, identifier a, a range)", w.count(taskapi.Total, counting, span), map[string]map[taskapi.State]taskapi.Summary{
			ta: {taskapi.Ready: {Count: 2, Bound: seqs[4]}},
		})
	}

	cases(t, all)
}
