package batch_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

func TestStored(t *testing.T) {
	creations := []taskapi.Creation{{Identifier: "a"}, {Identifier: "b", Suspended: true}, {Identifier: "a", Suspended: true}}
	for _, c := range []struct {
		insertion taskapi.Insertion
		ids       []string
		states    []taskapi.State
	}{
		{taskapi.Append, []string{"a", "b", "a"}, []taskapi.State{taskapi.Ready, taskapi.Suspended, taskapi.Suspended}},
		{taskapi.Replace, []string{"a", "b", "a"}, []taskapi.State{taskapi.Redundant, taskapi.Suspended, taskapi.Suspended}},
		{taskapi.Supersede, []string{"a", "b", "a"}, []taskapi.State{taskapi.Redundant, taskapi.Suspended, taskapi.Suspended}},
		{taskapi.Delete, []string{"b", "a"}, []taskapi.State{taskapi.Suspended, taskapi.Suspended}},
	} {
		stored, states := batch.Stored(c.insertion, creations)
		ids := make([]string, len(stored))
		for i, s := range stored {
			ids[i] = s.Identifier
		}
		if !slices.Equal(ids, c.ids) || !slices.Equal(states, c.states) {
			t.Errorf("Stored(%v) = %q %v, want %q %v", c.insertion, ids, states, c.ids, c.states)
		}
	}
}

func TestDecisionsKeepTheMoreSevereThenTheLaterOutput(t *testing.T) {
	done := func(seq int64, r taskapi.Result, out string) taskapi.Completion {
		return taskapi.Completion{Task: taskapi.Task{Sequence: seq}, Decision: taskapi.Decision{Result: r, Output: out}}
	}
	runs, n := batch.Decisions([]taskapi.Completion{
		done(2, taskapi.Success, ""), done(1, taskapi.Success, ""), done(3, taskapi.Failure, "x"),
		done(3, taskapi.Success, "y"), done(5, taskapi.Filter, "p"), done(5, taskapi.Filter, "q"),
	})
	want := []seqrange.Run[taskapi.Decision]{
		{Range: taskapi.Range{From: 1, To: 2}, Key: taskapi.Decision{Result: taskapi.Success}},
		{Range: taskapi.Range{From: 3, To: 3}, Key: taskapi.Decision{Result: taskapi.Failure, Output: "x"}},
		{Range: taskapi.Range{From: 5, To: 5}, Key: taskapi.Decision{Result: taskapi.Filter, Output: "q"}},
	}
	if n != 4 || !slices.Equal(runs, want) {
		t.Errorf("Decisions = %v, %d; want %v, 4", runs, n, want)
	}
}

func TestAssignmentsKeepTheOutputsApart(t *testing.T) {
	assign := func(sequence int64, result taskapi.Result, output string) taskapi.Assignment {
		return taskapi.Assignment{Task: taskapi.Task{Sequence: sequence}, Result: result, Output: output}
	}
	runs, n := batch.Assignments([]taskapi.Assignment{
		assign(1, taskapi.Success, "a"), assign(2, taskapi.Success, "a"), assign(3, taskapi.Success, "b"),
		assign(4, taskapi.Success, ""), assign(5, taskapi.Success, "b"),
		assign(7, taskapi.Success, "x"), assign(7, taskapi.Failure, ""), assign(7, taskapi.Success, "y"),
		assign(8, taskapi.Filter, "p"), assign(8, taskapi.Filter, ""), assign(8, taskapi.Filter, "q"), assign(8, taskapi.Filter, ""),
	})
	want := []seqrange.Run[taskapi.Decision]{
		{Range: taskapi.Range{From: 1, To: 2}, Key: taskapi.Decision{Result: taskapi.Success, Output: "a"}},
		{Range: taskapi.Range{From: 3, To: 3}, Key: taskapi.Decision{Result: taskapi.Success, Output: "b"}},
		{Range: taskapi.Range{From: 4, To: 4}, Key: taskapi.Decision{Result: taskapi.Success}},
		{Range: taskapi.Range{From: 5, To: 5}, Key: taskapi.Decision{Result: taskapi.Success, Output: "b"}},
		{Range: taskapi.Range{From: 7, To: 7}, Key: taskapi.Decision{Result: taskapi.Failure}},
		{Range: taskapi.Range{From: 8, To: 8}, Key: taskapi.Decision{Result: taskapi.Filter, Output: "q"}},
	}
	if n != 7 || !slices.Equal(runs, want) {
		t.Errorf("Assignments = %v, %d; want %v, 7", runs, n, want)
	}
}

func TestPositionsGroupReleasedSplit(t *testing.T) {
	position, seqs := batch.Positions([]taskapi.Task{{Sequence: 9}, {Sequence: 4}, {Sequence: 9}})
	if !slices.Equal(seqs, []int64{9, 4}) || position[4] != 1 {
		t.Errorf("Positions = %v, %v", position, seqs)
	}
	if got := batch.Group([]string{"b", "a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Group = %q", got)
	}
	groups := [][]string{{"a", "b"}, {"c"}, {"b", "d"}}
	if got := batch.Released(groups, []bool{true, false, true}); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Errorf("Released = %q", got)
	}
	var pieces [][]int
	_ = batch.Split([]int{1, 2, 3, 4, 5}, 2, func(p []int) error { pieces = append(pieces, p); return nil })
	if len(pieces) != 3 || !slices.Equal(pieces[2], []int{5}) {
		t.Errorf("Split = %v", pieces)
	}
}

func TestSplitBy(t *testing.T) {
	var pieces [][]int
	collect := func(p []int) error { pieces = append(pieces, p); return nil }
	weight := func(n int) int { return n }
	_ = batch.SplitBy([]int{1, 1, 1, 9, 2, 2, 2, 2}, 3, 5, weight, collect)
	want := [][]int{{1, 1, 1}, {9}, {2, 2}, {2, 2}}
	if !slices.EqualFunc(pieces, want, slices.Equal) {
		t.Errorf("SplitBy = %v, want %v", pieces, want)
	}
	pieces = nil
	_ = batch.SplitBy([]int{}, 3, 5, weight, collect)
	if len(pieces) != 0 {
		t.Errorf("SplitBy of nothing = %v", pieces)
	}
}

func benchCreations(n int) []taskapi.Creation {
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("id-%d", i%(n/2)), Input: fmt.Sprintf(`{"n":%d}`, i)}
	}
	return creations
}

// Append stores every creation: no map, no copy of the batch.
func BenchmarkStoredAppend(b *testing.B) {
	creations := benchCreations(1000)
	b.ReportAllocs()
	for b.Loop() {
		batch.Stored(taskapi.Append, creations)
	}
}

// Replace looks for identifiers named twice in the batch (here all of them).
func BenchmarkStoredReplace(b *testing.B) {
	creations := benchCreations(1000)
	b.ReportAllocs()
	for b.Loop() {
		batch.Stored(taskapi.Replace, creations)
	}
}

// A handle is a name for the handle a chunk ran on, as the units give it.
type handle string

func TestTopicsGoInChunksOfAStatement(t *testing.T) {
	topics := make([]string, 2*batch.TopicsPerStatement+1)
	for i := range topics {
		topics[i] = fmt.Sprintf("t%03d", i)
	}
	units := 0
	unit := func(step func(db handle) error) error {
		units++
		return step(handle(fmt.Sprint("unit-", units)))
	}
	var seen []string
	write := func(db handle, chunk []string) (int64, error) {
		if len(chunk) > batch.TopicsPerStatement {
			t.Errorf("a chunk of %d topics, more than %d", len(chunk), batch.TopicsPerStatement)
		}
		seen = append(seen, chunk...)
		return int64(len(chunk)), nil
	}

	// On a handle of the call's own: a unit per chunk.
	n, err := batch.WriteTopics(false, topics, unit, write)
	if err != nil || n != int64(len(topics)) || units != 3 || !slices.Equal(seen, topics) {
		t.Errorf("WriteTopics on a handle of its own = %d, %v in %d units over %d topics; want %d in 3 units, each topic once",
			n, err, units, len(seen), len(topics))
	}

	// Inside a transaction: one unit for every chunk, which sums again
	// from zero when the unit runs it again.
	units, seen = 0, nil
	again := func(step func(db handle) error) error {
		units++
		if err := step("first try"); err != nil {
			return err
		}
		return step("second try")
	}
	n, err = batch.WriteTopics(true, topics, again, write)
	if err != nil || n != int64(len(topics)) || units != 1 {
		t.Errorf("WriteTopics inside = %d, %v in %d units; want %d in 1 unit", n, err, units, len(topics))
	}

	// A failed chunk stops the rest; on a handle of its own the chunks
	// before it count.
	failing := func(db handle, chunk []string) (int64, error) {
		if chunk[0] == topics[batch.TopicsPerStatement] {
			return 0, errors.New("boom")
		}
		return int64(len(chunk)), nil
	}
	units = 0
	n, err = batch.WriteTopics(false, topics, unit, failing)
	if err == nil || n != batch.TopicsPerStatement || units != 2 {
		t.Errorf("WriteTopics with a failing second chunk = %d, %v in %d units; want the first chunk's %d and the error",
			n, err, units, batch.TopicsPerStatement)
	}

	// No topics: no unit.
	units = 0
	if n, err := batch.WriteTopics(true, nil, unit, write); n != 0 || err != nil || units != 0 {
		t.Errorf("WriteTopics of no topics = %d, %v in %d units; want nothing", n, err, units)
	}
	read := 0
	err = batch.ReadTopics[handle]("db", nil, func(func(handle) error) error { read++; return nil },
		func(handle, []string) error { read++; return nil })
	if err != nil || read != 0 {
		t.Errorf("ReadTopics of no topics read %d times, %v; want none", read, err)
	}
}
