// Package partial names the partial indexes of the task table that hold
// the tasks of some states, so that a read filtered on those states can
// state the index's predicate and be planned on it.
//
// PostgreSQL uses a partial index only when the conditions of a query
// imply its predicate, and it proves that at planning time: a generic plan
// (a statement prepared once and run many times) knows no values, so a
// state filter of parameters implies nothing. SQLite uses one only when
// the query holds the predicate in the very same words. Adding the
// predicate itself to a filter whose states are all held by the index
// changes no result and makes the index usable on both.
package partial

import (
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Rare is the predicate of task_rare (topic, state, sequence), in the
// words of the migrations (postgres 00012, sqlite 00011, which added
// CANCELLED to it): every state but READY, ACTIVE and SUCCEEDED, the states
// of a task's common life.
const Rare = "state IN (2, 3, 4, 5, 7, 8, 9)"

// Active is the predicate of task_active (owner): the ACTIVE tasks, as
// many as the consumers hold.
const Active = "state = 0"

// rare are the states that task_rare holds.
var rare = []taskapi.State{
	taskapi.Expired, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Recreated, taskapi.Redundant,
	taskapi.Cancelled,
}

// Predicate returns the predicate of the partial index that holds every
// task in states, Rare or Active, and "" when none does (no states, which
// filters nothing, or a state of the common life among them). READY has
// indexes of its own, which the backends name apart (the deferred tasks
// and the others).
func Predicate(states []taskapi.State) string {
	all := func(in []taskapi.State) bool {
		return len(states) > 0 && !slices.ContainsFunc(states, func(s taskapi.State) bool { return !slices.Contains(in, s) })
	}
	switch {
	case all(rare):
		return Rare
	case all([]taskapi.State{taskapi.Active}):
		return Active
	}
	return ""
}
