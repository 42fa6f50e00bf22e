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

// Ready returns how many of states, those of the tasks a push stores, are
// Ready: the room a push takes in a topic with a capacity.
func Ready(states []taskapi.State) int {
	n := 0
	for _, state := range states {
		if state == taskapi.Ready {
			n++
		}
	}
	return n
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

// Assignments returns what every task that assignments name becomes, by
// sequence: the result and the output that replaces the task's own (empty:
// kept), coalesced into runs of consecutive sequences with one result and
// output, and how many tasks they name. When a task is named twice, the
// more severe result wins with its output; on a tie, the later output that
// is not empty.
func Assignments(assignments []taskapi.Assignment) ([]seqrange.Run[taskapi.Decision], int) {
	decisions := map[int64]taskapi.Decision{}
	for _, a := range assignments {
		d, ok := decisions[a.Task.Sequence]
		if !ok || a.Result < d.Result || a.Result == d.Result && a.Output != "" {
			decisions[a.Task.Sequence] = taskapi.Decision{Result: a.Result, Output: a.Output}
		}
	}
	return runs(decisions), len(decisions)
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

// PageCursor returns the cursor from which Page lists the tasks of a
// PageAt whose time resolved to at, and false when there are none: at is
// the first sequence created at or after the time going Forward, the last
// one created at or before it going Backward.
func PageCursor(at int64, direction taskapi.Direction) (int64, bool) {
	switch {
	case direction == taskapi.Backward && at == taskapi.Inception,
		direction == taskapi.Forward && at == taskapi.MaxSequence:
		return 0, false
	case direction == taskapi.Backward:
		return at + 1, true
	}
	return at - 1, true
}

// TopicsPerStatement is how many topics a statement that spans topics names
// at most on PostgreSQL. A statement locks the partition of each topic it
// names and the partition's indexes, about eight locks a topic;
// PostgreSQL's lock table holds 64 locks per connection by default
// (max_locks_per_transaction), shared by all, and a transaction holds its
// locks until it ends.
const TopicsPerStatement = 32

// ReadTopics calls read with the database handle db and topics,
// TopicsPerStatement at a time. When there is more than one such chunk,
// each call goes through letGo, which runs it on a handle of its choice so
// that the locks it takes are let go before the next (a transaction of its
// own, or a savepoint rolled back afterwards); a single chunk takes no more
// locks than any call does and is read on db as it is. No topics: no call.
func ReadTopics[DB any](db DB, topics []string, letGo func(read func(db DB) error) error, read func(db DB, chunk []string) error) error {
	if len(topics) == 0 {
		return nil
	}
	if len(topics) <= TopicsPerStatement {
		return read(db, topics)
	}
	for chunk := range slices.Chunk(topics, TopicsPerStatement) {
		if err := letGo(func(db DB) error { return read(db, chunk) }); err != nil {
			return err
		}
	}
	return nil
}

// WriteTopics calls write for topics, TopicsPerStatement at a time, and
// returns the sum of what the calls return. Inside the caller's transaction
// (inside), every chunk goes through one call of unit, so that a failure
// changes nothing: their locks add up until the caller's transaction ends.
// On a handle of the call's own, each chunk goes through a call of unit of
// its own (a transaction that commits, retried on conflicts), so that its
// locks are let go before the next; an error then leaves the chunks before
// it done. No topics: no call.
func WriteTopics[DB any](inside bool, topics []string, unit func(step func(db DB) error) error,
	write func(db DB, chunk []string) (int64, error)) (int64, error) {
	if len(topics) == 0 {
		return 0, nil
	}
	if inside {
		var n int64
		err := unit(func(db DB) error {
			n = 0
			for chunk := range slices.Chunk(topics, TopicsPerStatement) {
				k, err := write(db, chunk)
				if err != nil {
					return err
				}
				n += k
			}
			return nil
		})
		return n, err
	}
	var n int64
	for chunk := range slices.Chunk(topics, TopicsPerStatement) {
		var k int64
		err := unit(func(db DB) (err error) {
			k, err = write(db, chunk)
			return err
		})
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// Counts returns the result of Count before any task is counted: every
// topic present, with no state.
func Counts(topics []string) map[string]map[taskapi.State]taskapi.Summary {
	counts := make(map[string]map[taskapi.State]taskapi.Summary, len(topics))
	for _, topic := range topics {
		counts[topic] = map[taskapi.State]taskapi.Summary{}
	}
	return counts
}

// ResultsOf returns the result of Results before any task is counted: every
// topic present, with no result.
func ResultsOf(topics []string) map[string]map[taskapi.Result]int64 {
	results := make(map[string]map[taskapi.Result]int64, len(topics))
	for _, topic := range topics {
		results[topic] = map[taskapi.Result]int64{}
	}
	return results
}

// ReadyIdentifiers returns the identifier of every Ready task of stored,
// whose states are states (as Stored returns them), once per task: what a
// push admits against the bounds of its identifiers.
func ReadyIdentifiers(stored []taskapi.Creation, states []taskapi.State) []string {
	identifiers := make([]string, 0, len(stored))
	for i, c := range stored {
		if states[i] == taskapi.Ready {
			identifiers = append(identifiers, c.Identifier)
		}
	}
	return identifiers
}
