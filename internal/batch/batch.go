// Package batch turns the arguments of repository calls into the work the
// statements do, the same way for every implementation: which creations of a
// push are stored and in what state, which decision or result each named
// task gets, which identifiers a join released, and how a long list is split
// into statements of bounded size.
package batch

import (
	"slices"

	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Stored returns the creations to store and the state of each. When an
// identifier appears several times in a batch, Replace and Supersede store
// its earlier creations Redundant and Delete drops them.
func Stored(insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Creation, []taskapi.State) {
	states := make([]taskapi.State, 0, len(creations))
	if insertion == taskapi.Append { // every creation is stored: no copy
		for _, c := range creations {
			states = append(states, created(c))
		}
		return creations, states
	}
	last := make(map[string]int, len(creations))
	for i, c := range creations {
		last[c.Identifier] = i
	}
	stored := make([]taskapi.Creation, 0, len(creations))
	for i, c := range creations {
		state := created(c)
		if last[c.Identifier] != i {
			if insertion == taskapi.Delete {
				continue
			}
			state = taskapi.Redundant
		}
		stored = append(stored, c)
		states = append(states, state)
	}
	return stored, states
}

// created is the state of a task as pushed: Ready, or Suspended.
func created(c taskapi.Creation) taskapi.State {
	if c.Suspended {
		return taskapi.Suspended
	}
	return taskapi.Ready
}

// Decisions returns the decision of every task that completions name, by
// sequence, coalesced into runs of consecutive sequences with one decision,
// and how many tasks they name. When a task is named twice, the more severe
// result wins, and on a tie the later output.
func Decisions(completions []taskapi.Completion) ([]seqrange.Run[taskapi.Decision], int) {
	decisions := map[int64]taskapi.Decision{}
	for _, c := range completions {
		if d, ok := decisions[c.Task.Sequence]; !ok || c.Decision.Result <= d.Result {
			decisions[c.Task.Sequence] = c.Decision
		}
	}
	return runs(decisions), len(decisions)
}

// Results returns the result of every task that assignments name, by
// sequence, coalesced into runs of consecutive sequences with one result, and
// how many tasks they name. When a task is named twice, the more severe
// result wins.
func Results(assignments []taskapi.Assignment) ([]seqrange.Run[taskapi.Result], int) {
	results := map[int64]taskapi.Result{}
	for _, a := range assignments {
		if old, ok := results[a.Task.Sequence]; ok {
			a.Result = a.Result.Merge(old)
		}
		results[a.Task.Sequence] = a.Result
	}
	return runs(results), len(results)
}

func runs[K comparable](keys map[int64]K) []seqrange.Run[K] {
	entries := make([]seqrange.Entry[K], 0, len(keys))
	for sequence, key := range keys {
		entries = append(entries, seqrange.Entry[K]{Sequence: sequence, Key: key})
	}
	return seqrange.Coalesce(entries)
}

// Positions returns the position of each distinct sequence of tasks in the
// order first given, and the distinct sequences in that order.
func Positions(tasks []taskapi.Task) (map[int64]int, []int64) {
	position := map[int64]int{}
	sequences := make([]int64, 0, len(tasks))
	for _, t := range tasks {
		if _, ok := position[t.Sequence]; !ok {
			position[t.Sequence] = len(sequences)
			sequences = append(sequences, t.Sequence)
		}
	}
	return position, sequences
}

// Group returns the distinct identifiers of a join group, sorted.
func Group(group []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(group)))
}

// Released returns the identifiers of the groups that released a task
// (released[i] for groups[i]), in the order given, each once.
func Released(groups [][]string, released []bool) []string {
	var identifiers []string
	seen := map[string]bool{}
	for i, group := range groups {
		for _, id := range group {
			if released[i] && !seen[id] {
				seen[id] = true
				identifiers = append(identifiers, id)
			}
		}
	}
	return identifiers
}

// Split calls fn with consecutive pieces of items of at most size elements,
// in order, and stops at the first error. size must be at least one.
func Split[T any](items []T, size int, fn func(piece []T) error) error {
	for piece := range slices.Chunk(items, size) {
		if err := fn(piece); err != nil {
			return err
		}
	}
	return nil
}

// SplitBy is Split with a second bound: a piece holds at most size items and
// at most budget in weight, except that an item heavier than budget makes a
// piece of its own. It keeps statements with large texts within the
// databases' packet limits.
func SplitBy[T any](items []T, size, budget int, weight func(T) int, fn func(piece []T) error) error {
	start, load := 0, 0
	for i, item := range items {
		w := weight(item)
		if i > start && (i-start == size || load+w > budget) {
			if err := fn(items[start:i]); err != nil {
				return err
			}
			start, load = i, 0
		}
		load += w
	}
	if start == len(items) {
		return nil
	}
	return fn(items[start:])
}
