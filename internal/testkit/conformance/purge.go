package conformance

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testPurge checks Purge (default states Failed..Redundant, explicit states,
// span limits, a span ending at Inception, the count returned), PurgeAll
// (empties the topic, keeps it usable), Destroy (drops tasks and topic) and
// that all three leave other topics alone and do nothing for an unknown topic.
func testPurge[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	// everyState makes one task of topic in each of the nine states, with
	// identifier "id-<state>". The Recreated and Redundant tasks are each
	// followed by a Ready task with the same identifier.
	everyState := func(w *world[Tx], topic string) map[taskapi.State]taskapi.Task {
		w.t.Helper()
		tasks := map[taskapi.State]taskapi.Task{}
		for s := taskapi.Active; s <= taskapi.Redundant; s++ {
			tasks[s] = w.task(topic, "id-"+stateName(s), s)
		}
		return tasks
	}
	// statesOf returns the sequences of topic's tasks in each state.
	statesOf := func(w *world[Tx], topic string) map[taskapi.State][]int64 {
		w.t.Helper()
		m := map[taskapi.State][]int64{}
		for _, info := range w.all(topic) {
			m[info.State] = append(m[info.State], info.Sequence)
		}
		return m
	}

	all["DefaultStates"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		tasks := everyState(w, ta)
		w.task(tb, "other", taskapi.Succeeded)
		beforeB := w.snapshot(tb)
		kept := statesOf(w, ta)
		for s := taskapi.Failed; s <= taskapi.Redundant; s++ {
			delete(kept, s)
		}

		wantN(t, "Purge(unbounded)", w.purge(ta, taskapi.Unbounded), 6)
		if got := statesOf(w, ta); !maps.EqualFunc(got, kept, slices.Equal) {
			t.Errorf("after Purge: %v, want %v (Active, Ready and Expired kept)", got, kept)
		}
		for s := taskapi.Failed; s <= taskapi.Redundant; s++ {
			w.missing(ta, tasks[s].Sequence)
		}
		w.unchanged(beforeB)
		wantN(t, "Purge again", w.purge(ta, taskapi.Unbounded), 0)
	}

	all["ExplicitStates"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		everyState(w, ta)
		steps := []struct {
			states []taskapi.State
			want   int64
		}{
			{[]taskapi.State{taskapi.Ready}, 3}, // id-ready and the successors of id-recreated and id-redundant
			{[]taskapi.State{taskapi.Active, taskapi.Expired}, 2},
			{[]taskapi.State{taskapi.Succeeded, taskapi.Succeeded}, 1},
			{[]taskapi.State{taskapi.Failed, taskapi.Recreated}, 2},
			{nil, 3}, // Suspended, Filtered, Redundant
		}
		for _, step := range steps {
			before := statesOf(w, ta)
			n := w.purge(ta, taskapi.Unbounded, step.states...)
			wantN(t, "Purge(states "+statesString(step.states)+")", n, step.want)
			after := statesOf(w, ta)
			gone := step.states
			if gone == nil {
				gone = []taskapi.State{taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant}
			}
			for s := taskapi.Active; s <= taskapi.Redundant; s++ {
				want := before[s]
				if slices.Contains(gone, s) {
					want = nil
				}
				if !slices.Equal(after[s], want) {
					t.Errorf("after Purge(%s): %v tasks %v, want %v", statesString(step.states), s, after[s], want)
				}
			}
		}
		if left := w.all(ta); len(left) != 0 {
			t.Errorf("tasks left: %s", describe(left))
		}
	}

	all["SpanLimits"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		var s []taskapi.Task
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			s = append(s, w.task(ta, id, taskapi.Succeeded))
		}
		wantN(t, "Purge(b..d)", w.purge(ta, taskapi.Range{From: s[1].Sequence, To: s[3].Sequence}), 3)
		wantSeqs(t, "left after Purge(b..d)", infoSequences(w.all(ta)), seqsOf(s[0], s[4]))
		wantN(t, "Purge(e..max)", w.purge(ta, taskapi.Range{From: s[4].Sequence, To: taskapi.MaxSequence}), 1)
		wantN(t, "Purge(inception..a)", w.purge(ta, taskapi.Range{From: taskapi.Inception, To: s[0].Sequence}), 1)
		wantSeqs(t, "left", infoSequences(w.all(ta)), nil)
	}

	all["NothingAtInceptionOrInverted"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		a := w.task(ta, "a", taskapi.Succeeded)
		c := w.task(ta, "c", taskapi.Failed)
		before := w.snapshot(ta)
		for _, span := range []taskapi.Range{
			{From: taskapi.Inception, To: taskapi.Inception},
			{From: -10, To: taskapi.Inception},
			{From: c.Sequence, To: a.Sequence},
		} {
			wantN(t, "Purge("+spanString(span)+")", w.purge(ta, span), 0)
			wantN(t, "Purge("+spanString(span)+", SUCCEEDED)", w.purge(ta, span, taskapi.Succeeded), 0)
		}
		w.unchanged(before)
	}

	all["PurgeAllKeepsTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		everyState(w, ta)
		last := w.all(ta)
		maxSeq := last[len(last)-1].Sequence
		w.task(tb, "other", taskapi.Ready)
		beforeB := w.snapshot(tb)

		w.must(w.repo.PurgeAll(w.ctx, w.db, ta), "PurgeAll")
		if left := w.all(ta); len(left) != 0 {
			t.Errorf("PurgeAll left %s", describe(left))
		}
		w.wantTopics(ta, tb)
		w.unchanged(beforeB)
		fresh := w.pushIDs(ta, "new")[0]
		if fresh.Sequence <= maxSeq {
			t.Errorf("push after PurgeAll got sequence %d, want above %d", fresh.Sequence, maxSeq)
		}
		polled := w.poll(ta, 5)
		wantSeqs(t, "Poll after PurgeAll", seqsOf(polled...), seqsOf(fresh))
		w.must(w.repo.PurgeAll(w.ctx, w.db, ta), "PurgeAll again")
		w.must(w.repo.PurgeAll(w.ctx, w.db, ta), "PurgeAll of an empty topic")
		wantSeqs(t, "left", infoSequences(w.all(ta)), nil)
	}

	all["DestroyRemovesTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		tasks := everyState(w, ta)
		w.task(tb, "other", taskapi.Failed)
		beforeB := w.snapshot(tb)

		destroyed, err := w.repo.Destroy(w.ctx, w.db, ta)
		w.must(err, "Destroy")
		if !destroyed {
			t.Errorf("Destroy = false, want true")
		}
		w.wantTopics(tb)
		w.unchanged(beforeB)
		w.missing(ta, tasks[taskapi.Ready].Sequence)
		wantSeqs(t, "Page after Destroy", infoSequences(w.all(ta)), nil)
		if counts := w.count(taskapi.Total, taskapi.Counting{}, taskapi.Unbounded); counts[ta] != nil || len(counts) != 1 {
			t.Errorf("Count after Destroy = %v, want only %q", counts, tb)
		}
		pushed, err := w.repo.Push(w.ctx, w.db, ta, taskapi.Append, taskapi.Creation{Identifier: "late"})
		if !errors.Is(err, taskapi.ErrUnknownTopic) || len(pushed) != 0 {
			t.Errorf("Push after Destroy = %v, %v; want ErrUnknownTopic", pushed, err)
		}
		destroyed, err = w.repo.Destroy(w.ctx, w.db, ta)
		if err != nil || destroyed {
			t.Errorf("Destroy again = %v, %v; want false", destroyed, err)
		}
		// Initializing the topic again gives an empty topic.
		created, err := w.repo.Initialize(w.ctx, w.db, ta)
		if err != nil || !created {
			t.Errorf("Initialize after Destroy = %v, %v; want true", created, err)
		}
		wantSeqs(t, "Page after Initialize", infoSequences(w.all(ta)), nil)
		w.pushIDs(ta, "again")
		w.unchanged(beforeB)
	}

	all["UnknownTopic"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		w.task(ta, "a", taskapi.Succeeded)
		before := w.snapshot(ta)
		wantN(t, "Purge(unknown topic)", w.purge("nowhere", taskapi.Unbounded), 0)
		wantN(t, "Purge(unknown topic, READY)", w.purge("nowhere", taskapi.Unbounded, taskapi.Ready), 0)
		w.must(w.repo.PurgeAll(w.ctx, w.db, "nowhere"), "PurgeAll(unknown topic)")
		destroyed, err := w.repo.Destroy(w.ctx, w.db, "nowhere")
		if err != nil || destroyed {
			t.Errorf("Destroy(unknown topic) = %v, %v; want false", destroyed, err)
		}
		w.wantTopics(ta)
		w.unchanged(before)
	}

	cases(t, all)
}

// statesString formats states for a message.
func statesString(states []taskapi.State) string {
	if len(states) == 0 {
		return "default"
	}
	s := ""
	for i, state := range states {
		if i > 0 {
			s += ","
		}
		s += state.String()
	}
	return s
}

// spanString formats a range for a message.
func spanString(r taskapi.Range) string {
	return cursorName(r.From) + ".." + cursorName(r.To)
}
