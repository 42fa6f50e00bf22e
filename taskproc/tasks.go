// Helpers over lists of tasks: their sequences, their order, and the tasks
// left without some.

package taskproc

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// without returns tasks but those with the given sequences.
func without(tasks []taskapi.Task, sequences []int64) []taskapi.Task {
	return slices.DeleteFunc(slices.Clone(tasks), func(t taskapi.Task) bool { return slices.Contains(sequences, t.Sequence) })
}

// sequences returns the sequences of tasks, ascending.
func sequences(tasks []taskapi.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, t := range tasks {
		out[i] = t.Sequence
	}
	slices.Sort(out)
	return out
}

// joinSequences lists sequences for a message.
func joinSequences(sequences []int64) string {
	parts := make([]string, len(sequences))
	for i, s := range sequences {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}

// sortedBySequence returns tasks in ascending sequence.
func sortedBySequence(tasks []taskapi.Task) []taskapi.Task {
	return slices.SortedFunc(slices.Values(tasks), func(a, b taskapi.Task) int { return cmp.Compare(a.Sequence, b.Sequence) })
}

// sequenceSpan returns the lowest and highest sequence of tasks.
func sequenceSpan(tasks []taskapi.Task) (lo, hi int64) {
	lo, hi = tasks[0].Sequence, tasks[0].Sequence
	for _, t := range tasks[1:] {
		lo, hi = min(lo, t.Sequence), max(hi, t.Sequence)
	}
	return lo, hi
}
