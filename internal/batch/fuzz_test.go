package batch_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// sequence decodes a byte into a sequence: an offset from -128 to 127 from
// base, wrapping around the ends of int64, so that a few bytes name the same
// task twice, neighbours, or tasks at both ends of int64.
func sequence(base int64, b byte) int64 { return int64(uint64(base) + uint64(int64(int8(b)))) }

// checkRuns checks runs against want, the key each sequence must have:
// ascending, not overlapping, maximal (two runs that touch have different
// keys), every sequence of a run given with the run's key, and together
// exactly the sequences of want.
func checkRuns[K comparable](t *testing.T, runs []seqrange.Run[K], want map[int64]K) {
	t.Helper()
	covered := 0
	for i, run := range runs {
		r := run.Range
		if r.From > r.To || uint64(r.To)-uint64(r.From) >= uint64(len(want)) {
			t.Fatalf("run %d of %v is inverted or holds more than the %d tasks named", i, runs, len(want))
		}
		for s := r.From; ; s++ {
			covered++
			if key, ok := want[s]; !ok || key != run.Key {
				t.Fatalf("run %v holds task %d, want %v (named: %v)", run, s, key, ok)
			}
			if s == r.To {
				break
			}
		}
		if i > 0 {
			prev := runs[i-1]
			if prev.Range.To >= r.From {
				t.Fatalf("runs %v and %v overlap or are out of order", prev, run)
			}
			if uint64(r.From)-uint64(prev.Range.To) == 1 && prev.Key == run.Key {
				t.Fatalf("runs %v and %v touch with one key: not coalesced", prev, run)
			}
		}
	}
	if covered != len(want) {
		t.Fatalf("runs %v hold %d tasks, want the %d named", runs, covered, len(want))
	}
}

// decided is the oracle of Decisions: for each sequence, the most severe
// result named for it (the lowest ordinal) and, among the completions with
// that result, the output of the last.
func decided(completions []taskapi.Completion) map[int64]taskapi.Decision {
	want := map[int64]taskapi.Decision{}
	for _, c := range completions {
		worst := c.Decision.Result
		for _, other := range completions {
			if other.Task.Sequence == c.Task.Sequence && other.Decision.Result < worst {
				worst = other.Decision.Result
			}
		}
		if c.Decision.Result == worst {
			want[c.Task.Sequence] = c.Decision // a later one overwrites
		}
	}
	return want
}

// FuzzDecisions checks Decisions, the merge of the decisions of Complete,
// against a brute-force oracle.
//
// Properties, for any completions with defined results (check.Completions
// runs first), outputs that tie or differ, and sequences named once or more
// (negatives and both ends of int64 included):
//   - Decisions never panics;
//   - every task named is decided exactly once: the runs hold each named
//     sequence once and nothing else, ascending, coalesced as far as one
//     decision goes (see checkRuns), and the count is the number of
//     distinct sequences;
//   - a task named several times gets the most severe result named for it
//     (FAILURE > SUSPENSION > FILTER > SUCCESS, the minimum, as
//     Result.Merge), and on a tie the later output;
//   - the results do not depend on the order of the completions: the
//     completions reversed give each task the same result (the output of a
//     tie then being the other end's).
func FuzzDecisions(f *testing.F) {
	f.Add(int64(0), "x", []byte{2, 0x03, 1, 0x03, 3, 0x00, 3, 0x07, 5, 0x06, 5, 0x0a})
	f.Add(int64(0), "", []byte{})
	f.Add(int64(1), "out", []byte{0, 0x00, 0, 0x04, 0, 0x08, 0, 0x0c}) // one task, four Failures: the last output
	f.Add(int64(1), "out", []byte{0, 0x03, 0, 0x02, 0, 0x01, 0, 0x00}) // one task, getting worse
	f.Add(int64(1), "out", []byte{0, 0x00, 0, 0x01, 0, 0x02, 0, 0x03}) // one task, getting better
	f.Add(int64(math.MaxInt64), "o", []byte{0, 0x03, 0xff, 0x03, 1, 0x03, 2, 0x03})
	f.Add(int64(math.MinInt64), "o", []byte{0, 0x01, 0xff, 0x01, 1, 0x01})
	f.Add(int64(1000), "é", []byte{0, 3, 1, 3, 2, 3, 3, 3, 4, 7, 5, 3, 6, 3})
	f.Fuzz(func(t *testing.T, base int64, text string, data []byte) {
		outputs := []string{"", text, "other", text + text}
		var completions []taskapi.Completion
		for i := 0; i+1 < len(data); i += 2 {
			completions = append(completions, taskapi.Completion{
				Task:     taskapi.Task{Sequence: sequence(base, data[i]), Identifier: "id"},
				Decision: taskapi.Decision{Result: taskapi.Result(data[i+1] & 3), Output: outputs[data[i+1]>>2&3]},
			})
		}
		given := slices.Clone(completions)
		want := decided(completions)
		runs, n := batch.Decisions(completions)
		if !slices.Equal(completions, given) {
			t.Fatalf("Decisions changed its argument")
		}
		if n != len(want) {
			t.Fatalf("Decisions counts %d tasks, want the %d distinct ones named", n, len(want))
		}
		checkRuns(t, runs, want)

		slices.Reverse(completions)
		reversed, m := batch.Decisions(completions)
		checkRuns(t, reversed, decided(completions))
		resultOf := func(runs []seqrange.Run[taskapi.Decision]) map[int64]taskapi.Result {
			results := map[int64]taskapi.Result{}
			for _, run := range runs {
				for s := run.Range.From; ; s++ {
					results[s] = run.Key.Result
					if s == run.Range.To {
						break
					}
				}
			}
			return results
		}
		if a, b := resultOf(runs), resultOf(reversed); m != n || len(a) != len(b) || !mapsEqual(a, b) {
			t.Fatalf("the results depend on the order of the completions: %v, then reversed %v", runs, reversed)
		}
	})
}

// mapsEqual reports whether a and b hold the same pairs.
func mapsEqual[K, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzAssignments checks Assignments, what Reassign makes of every task
// named, against a brute-force oracle.
//
// Properties, for any assignments with defined results (check.Assignments
// runs first), outputs empty, tying or differing, and sequences named once
// or more:
//   - Assignments never panics and leaves its argument as it was;
//   - every task named gets exactly one result and output, in ascending
//     runs coalesced as far as one result and output go (see checkRuns),
//     and the count is the number of distinct sequences;
//   - a task named several times gets the most severe result named for it,
//     with the output named with it; on a tie the later output that is not
//     empty (empty keeps the task's own);
func FuzzAssignments(f *testing.F) {
	f.Add(int64(0), "x", []byte{2, 0x03, 1, 0x03, 3, 0x00, 3, 0x07, 5, 0x06, 5, 0x0a})
	f.Add(int64(0), "", []byte{})
	f.Add(int64(1), "out", []byte{0, 0x04, 0, 0x00, 0, 0x08}) // one task, three Failures: the last output, not the empty one
	f.Add(int64(1), "out", []byte{0, 0x07, 0, 0x02, 0, 0x01, 0, 0x00})
	f.Add(int64(math.MaxInt64), "o", []byte{0, 0x07, 0xff, 0x03, 1, 0x0b, 2, 0x03})
	f.Add(int64(math.MinInt64), "o", []byte{0, 0x01, 0xff, 0x05, 1, 0x01})
	f.Fuzz(func(t *testing.T, base int64, text string, data []byte) {
		outputs := []string{"", text, "other", text + text}
		var assignments []taskapi.Assignment
		want := map[int64]taskapi.Decision{}
		for i := 0; i+1 < len(data); i += 2 {
			a := taskapi.Assignment{Task: taskapi.Task{Sequence: sequence(base, data[i])},
				Result: taskapi.Result(data[i+1] & 3), Output: outputs[data[i+1]>>2&3]}
			assignments = append(assignments, a)
			old, named := want[a.Task.Sequence]
			switch {
			case !named || a.Result < old.Result:
				want[a.Task.Sequence] = taskapi.Decision{Result: a.Result, Output: a.Output}
			case a.Result == old.Result && a.Output != "":
				want[a.Task.Sequence] = taskapi.Decision{Result: a.Result, Output: a.Output}
			}
		}
		given := slices.Clone(assignments)
		runs, n := batch.Assignments(assignments)
		if !slices.Equal(assignments, given) {
			t.Fatalf("Assignments changed its argument")
		}
		if n != len(want) {
			t.Fatalf("Assignments counts %d tasks, want the %d distinct ones named", n, len(want))
		}
		checkRuns(t, runs, want)
	})
}

// FuzzStored checks Stored, what a push stores, against its documentation.
//
// Properties, for any creations (identifiers from a small alphabet, so that
// many repeat; Suspended or not) and any defined insertion mode:
//   - Stored never panics and leaves its argument as it was;
//   - Append stores every creation in order, Ready or Suspended as pushed;
//   - Replace and Supersede store every creation in order; the last
//     creation of each identifier is Ready or Suspended as pushed, the
//     earlier ones Redundant;
//   - Delete stores only the last creation of each identifier, in order,
//     Ready or Suspended as pushed;
//   - there is one state for each creation stored.
func FuzzStored(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0x09, 0x08})
	f.Add(uint8(1), []byte{0, 0x09, 0x08})
	f.Add(uint8(2), []byte{0, 0x09, 0x08})
	f.Add(uint8(3), []byte{0, 0x09, 0x08})
	f.Add(uint8(3), []byte{})
	f.Add(uint8(2), []byte{1, 1, 1, 1, 9})
	f.Add(uint8(3), []byte{0, 1, 2, 3, 4, 5, 6, 7, 15, 14, 13, 12, 11, 10, 9, 8})
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		insertion := taskapi.Insertion(mode % 4)
		creations := make([]taskapi.Creation, len(data))
		for i, b := range data {
			creations[i] = taskapi.Creation{
				Identifier: string(rune('a' + b&7)),
				Input:      strconv.Itoa(i), // tells the creations apart
				Suspended:  b&8 != 0,
			}
		}
		given := slices.Clone(creations)
		stored, states := batch.Stored(insertion, creations)
		if !slices.Equal(creations, given) {
			t.Fatalf("Stored changed its argument")
		}
		var wantStored []taskapi.Creation
		var wantStates []taskapi.State
		for i, c := range creations {
			pushed := taskapi.Ready
			if c.Suspended {
				pushed = taskapi.Suspended
			}
			last := true
			for _, later := range creations[i+1:] {
				if later.Identifier == c.Identifier {
					last = false
				}
			}
			switch {
			case insertion == taskapi.Append || last:
				wantStored, wantStates = append(wantStored, c), append(wantStates, pushed)
			case insertion == taskapi.Delete:
			default: // Replace, Supersede
				wantStored, wantStates = append(wantStored, c), append(wantStates, taskapi.Redundant)
			}
		}
		if !slices.Equal(stored, wantStored) || !slices.Equal(states, wantStates) {
			t.Fatalf("Stored(%v, %v) = %v, %v; want %v, %v", insertion, creations, stored, states, wantStored, wantStates)
		}
	})
}

// FuzzSplitBy checks Split and SplitBy, which cut a call's items into
// statements, against their documentation.
//
// Properties, for any weights, any size of at least one and any budget:
//   - neither panics; the pieces are never empty, and joined in order they
//     are the items, each once;
//   - Split's pieces hold size items, the last one at most size;
//   - a piece of SplitBy holds at most size items and weighs at most the
//     budget, or is a single item heavier than the budget;
//   - a piece is cut no earlier than it must be: the next item would make
//     it too long or too heavy;
//   - the first error of fn stops the split and is returned: fn sees no
//     piece after it.
func FuzzSplitBy(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(0xff), []byte{1, 1, 1, 9, 2, 2, 2, 2})
	f.Add(uint8(1), uint8(0), uint8(0xff), []byte{0, 0, 0})
	f.Add(uint8(0), uint8(255), uint8(1), []byte{255, 255, 1})
	f.Add(uint8(8), uint8(10), uint8(0), []byte{10, 0, 10, 11, 0})
	f.Add(uint8(2), uint8(3), uint8(0xff), []byte{})
	f.Fuzz(func(t *testing.T, sizeByte, budgetByte, failAt uint8, data []byte) {
		size, budget := 1+int(sizeByte%16), int(budgetByte)
		items := make([]int, len(data))
		for i, b := range data {
			items[i] = int(b)
		}
		weight := func(n int) int { return n }
		boom := errors.New("boom")
		var pieces [][]int
		err := batch.SplitBy(items, size, budget, weight, func(piece []int) error {
			pieces = append(pieces, slices.Clone(piece))
			if len(pieces)-1 == int(failAt) {
				return boom
			}
			return nil
		})
		joined := slices.Concat(pieces...)
		failed := len(pieces) > int(failAt)
		switch {
		case failed && (!errors.Is(err, boom) || len(pieces) != int(failAt)+1):
			t.Fatalf("SplitBy went on after an error: %d pieces, %v", len(pieces), err)
		case !failed && (err != nil || !slices.Equal(joined, items)):
			t.Fatalf("SplitBy(%v, %d, %d) = %v, %v; want the items in order", items, size, budget, pieces, err)
		case failed && !slices.Equal(joined, items[:len(joined)]):
			t.Fatalf("SplitBy(%v, %d, %d) = %v; want the items in order", items, size, budget, pieces)
		}
		at := 0 // where the next piece starts among items
		for i, piece := range pieces {
			load := 0
			for _, item := range piece {
				load += weight(item)
			}
			if len(piece) == 0 || len(piece) > size || load > budget && len(piece) > 1 {
				t.Fatalf("SplitBy(%v, %d, %d): piece %d, %v, is empty, too long or too heavy", items, size, budget, i, piece)
			}
			at += len(piece)
			if at < len(items) && i < len(pieces)-1 && len(piece) < size && load+weight(items[at]) <= budget {
				t.Fatalf("SplitBy(%v, %d, %d): piece %d, %v, was cut while %d fit", items, size, budget, i, piece, items[at])
			}
		}

		pieces = nil
		err = batch.Split(items, size, func(piece []int) error { pieces = append(pieces, piece); return nil })
		if err != nil || !slices.Equal(slices.Concat(pieces...), items) {
			t.Fatalf("Split(%v, %d) = %v, %v", items, size, pieces, err)
		}
		for i, piece := range pieces {
			if len(piece) == 0 || len(piece) > size || i < len(pieces)-1 && len(piece) != size {
				t.Fatalf("Split(%v, %d) = %v: piece %d has the wrong length", items, size, pieces, i)
			}
		}
	})
}
