package taskapi

import (
	"fmt"
	"strings"
)

// enumName returns the upper-case name of e, or Kind(n) for a value out of range.
func enumName[E ~int](names []string, kind string, e E) string {
	if e >= 0 && int(e) < len(names) {
		return names[e]
	}
	return fmt.Sprintf("%s(%d)", kind, int(e))
}

// parseEnum finds s among names. The match ignores case and underscores, so
// both "SINGULAR_BY_IDENTIFIER" and "SingularByIdentifier" are accepted; the
// names are ASCII, and so is the case it ignores: no other letter, such as
// the dotless "ı" or the long "ſ" that strings.ToUpper turns into I and S,
// stands in for one of theirs.
func parseEnum[E ~int](names []string, kind, s string) (E, error) {
	want := normalizeName(s)
	for i, name := range names {
		if want != "" && normalizeName(name) == want {
			return E(i), nil
		}
	}
	if len(s) > maxShownName { // keep a huge argument out of the message
		s = strings.ToValidUTF8(s[:maxShownName], "") + "…"
	}
	return 0, fmt.Errorf("unknown %s %q: %w", kind, s, ErrInvalidArgument)
}

// maxShownName is how many bytes of a bad enum name an error repeats.
const maxShownName = 64

func normalizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '_':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// State is the lifecycle state of a task. Its ordinal is stored in the
// database, and ranges of ordinals are meaningful (see the constants).
type State int

// The states in ordinal order.
const (
	Active    State = iota // polled, being processed by its owner
	Ready                  // waiting to be polled
	Expired                // was active, its owner stopped sending heartbeats
	Failed                 // completed with Failure
	Suspended              // completed with Suspension, or pushed suspended
	Filtered               // completed with Filter
	Succeeded              // completed with Success
	Recreated              // revived as a new task
	Redundant              // replaced by a newer task with the same identifier
	Cancelled              // cancelled before it ran, or while it ran (see Canceller)
)

var stateNames = []string{"ACTIVE", "READY", "EXPIRED", "FAILED", "SUSPENDED", "FILTERED", "SUCCEEDED", "RECREATED", "REDUNDANT", "CANCELLED"}

// String returns the upper-case name of the state, such as "READY".
func (s State) String() string { return enumName(stateNames, "State", s) }

// Valid reports whether s is one of the ten defined states.
func (s State) Valid() bool { return s >= Active && s <= Cancelled }

// Completed reports whether s is the state of a completed task (Failed to Succeeded).
func (s State) Completed() bool { return s >= Failed && s <= Succeeded }

// Revivable reports whether a task in s may be revived or reassigned (Expired to Succeeded).
func (s State) Revivable() bool { return s >= Expired && s <= Succeeded }

// Cancellable reports whether Canceller.Cancel ends a task in s (Ready,
// Active or Suspended).
func (s State) Cancellable() bool { return s == Ready || s == Active || s == Suspended }

// Result returns the result whose completion leads to s, and false when s is
// not a completed state.
func (s State) Result() (Result, bool) {
	if !s.Completed() {
		return 0, false
	}
	return Result(s - Failed), true
}

// ParseState parses a state name such as "READY" (case-insensitive).
func ParseState(s string) (State, error) { return parseEnum[State](stateNames, "state", s) }

// Result is the outcome of processing a task. Results are ordered by
// severity, most severe first.
type Result int

// The results in ordinal order.
const (
	Failure    Result = iota // leads to Failed
	Suspension               // leads to Suspended
	Filter                   // leads to Filtered
	Success                  // leads to Succeeded
)

var resultNames = []string{"FAILURE", "SUSPENSION", "FILTER", "SUCCESS"}

// String returns the upper-case name of the result, such as "SUCCESS".
func (r Result) String() string { return enumName(resultNames, "Result", r) }

// Valid reports whether r is one of the four defined results.
func (r Result) Valid() bool { return r >= Failure && r <= Success }

// State returns the state a task is left in when completed with r.
func (r Result) State() State { return Failed + State(r) }

// Merge returns the more severe of r and other:
// Failure > Suspension > Filter > Success.
func (r Result) Merge(other Result) Result { return min(r, other) }

// ParseResult parses a result name such as "SUCCESS" (case-insensitive).
func ParseResult(s string) (Result, error) { return parseEnum[Result](resultNames, "result", s) }

// Insertion says what a push does to older tasks with the same identifier.
type Insertion int

// The insertion modes.
const (
	Append    Insertion = iota // add the tasks, touch nothing else
	Supersede                  // older Ready tasks become Redundant
	Replace                    // older tasks in Ready..Succeeded become Redundant
	Delete                     // older tasks in any state but Active are deleted
)

var insertionNames = []string{"APPEND", "SUPERSEDE", "REPLACE", "DELETE"}

// String returns the upper-case name of the insertion mode, such as "APPEND".
func (i Insertion) String() string { return enumName(insertionNames, "Insertion", i) }

// Valid reports whether i is a defined insertion mode.
func (i Insertion) Valid() bool { return i >= Append && i <= Delete }

// ParseInsertion parses an insertion name such as "REPLACE" (case-insensitive).
func ParseInsertion(s string) (Insertion, error) {
	return parseEnum[Insertion](insertionNames, "insertion", s)
}

// Order is the order in which Poll takes Ready tasks. It is a PollOption.
type Order int

// The poll orders; FIFO is the default.
const (
	FIFO Order = iota // ascending sequence
	LIFO              // descending sequence
)

var orderNames = []string{"FIFO", "LIFO"}

// String returns the upper-case name of the order, such as "FIFO".
func (o Order) String() string { return enumName(orderNames, "Order", o) }

// Valid reports whether o is a defined order.
func (o Order) Valid() bool { return o == FIFO || o == LIFO }

// ParseOrder parses an order name such as "LIFO" (case-insensitive).
func ParseOrder(s string) (Order, error) { return parseEnum[Order](orderNames, "order", s) }

// Condition restricts which Ready tasks Poll may take. It is a PollOption.
type Condition int

// The poll conditions; Unconditional is the default.
const (
	// Unconditional takes any Ready task.
	Unconditional Condition = iota
	// SingularByIdentifier skips a task while another task with the same
	// identifier is Active, or Ready and earlier in the poll order; given
	// AwaitRevival, also while one is Expired.
	SingularByIdentifier
	// SingularByIdentifierSuspendOnFailure also skips it while a task with
	// the same identifier is Expired or Failed.
	SingularByIdentifierSuspendOnFailure
	// SingularByIdentifierSuspendUntilSuccess also skips it while a task with
	// the same identifier is Expired, Failed or Suspended.
	SingularByIdentifierSuspendUntilSuccess
)

var conditionNames = []string{
	"UNCONDITIONAL", "SINGULAR_BY_IDENTIFIER",
	"SINGULAR_BY_IDENTIFIER_SUSPEND_ON_FAILURE", "SINGULAR_BY_IDENTIFIER_SUSPEND_UNTIL_SUCCESS",
}

// String returns the upper-case name of the condition, such as "SINGULAR_BY_IDENTIFIER".
func (c Condition) String() string { return enumName(conditionNames, "Condition", c) }

// Valid reports whether c is a defined condition.
func (c Condition) Valid() bool {
	return c >= Unconditional && c <= SingularByIdentifierSuspendUntilSuccess
}

// Blocking returns the states of other tasks with the same identifier that
// keep a Ready task from being polled under c, besides Active and earlier
// Ready tasks. It is empty for Unconditional and SingularByIdentifier.
func (c Condition) Blocking() []State {
	switch c {
	case SingularByIdentifierSuspendOnFailure:
		return []State{Expired, Failed}
	case SingularByIdentifierSuspendUntilSuccess:
		return []State{Expired, Failed, Suspended}
	}
	return nil
}

// ParseCondition parses a condition name such as "SINGULAR_BY_IDENTIFIER" (case-insensitive).
func ParseCondition(s string) (Condition, error) {
	return parseEnum[Condition](conditionNames, "condition", s)
}

// Revivification says how a revived task carries on.
type Revivification int

// The revival modes.
const (
	ReviveAppend    Revivification = iota // mark Recreated, push a new task with Append
	ReviveSupersede                       // mark Recreated, push a new task with Supersede
	ReviveReplace                         // mark Recreated, push a new task with Replace
	ReviveReset                           // set the task Ready again, keeping its sequence and its last output
)

var revivificationNames = []string{"REVIVE_APPEND", "REVIVE_SUPERSEDE", "REVIVE_REPLACE", "REVIVE_RESET"}

// String returns the upper-case name of the revival mode, such as "REVIVE_RESET".
func (r Revivification) String() string {
	return enumName(revivificationNames, "Revivification", r)
}

// Valid reports whether r is a defined revival mode.
func (r Revivification) Valid() bool { return r >= ReviveAppend && r <= ReviveReset }

// Insertion returns the insertion mode used to push the new task, and false
// for ReviveReset, which pushes nothing.
func (r Revivification) Insertion() (Insertion, bool) {
	switch r {
	case ReviveAppend:
		return Append, true
	case ReviveSupersede:
		return Supersede, true
	case ReviveReplace:
		return Replace, true
	}
	return 0, false
}

// ParseRevivification parses a revival mode name such as "REVIVE_RESET"
// (case-insensitive; the REVIVE_ prefix may be left out).
func ParseRevivification(s string) (Revivification, error) {
	if r, err := parseEnum[Revivification](revivificationNames, "revivification", s); err == nil {
		return r, nil
	}
	return parseEnum[Revivification](revivificationNames, "revivification", "REVIVE_"+s)
}

// Junction says which tasks must exist before Join releases a group.
type Junction int

// The junction kinds.
const (
	Singular Junction = iota // every identifier of the group has a Suspended task
	Eternal                  // every identifier of the group has a task that is not Redundant
)

var junctionNames = []string{"SINGULAR", "ETERNAL"}

// String returns the upper-case name of the junction, such as "SINGULAR".
func (j Junction) String() string { return enumName(junctionNames, "Junction", j) }

// Valid reports whether j is a defined junction.
func (j Junction) Valid() bool { return j == Singular || j == Eternal }

// ParseJunction parses a junction name such as "ETERNAL" (case-insensitive).
func ParseJunction(s string) (Junction, error) {
	return parseEnum[Junction](junctionNames, "junction", s)
}

// Direction is the direction in which Page walks from its cursor.
type Direction int

// The paging directions.
const (
	Forward  Direction = iota // sequences above the cursor, ascending
	Backward                  // sequences below the cursor, descending
)

var directionNames = []string{"FORWARD", "BACKWARD"}

// String returns the upper-case name of the direction, such as "FORWARD".
func (d Direction) String() string { return enumName(directionNames, "Direction", d) }

// Valid reports whether d is a defined direction.
func (d Direction) Valid() bool { return d == Forward || d == Backward }

// ParseDirection parses a direction name such as "BACKWARD" (case-insensitive).
func ParseDirection(s string) (Direction, error) {
	return parseEnum[Direction](directionNames, "direction", s)
}

// Snapshot says which tasks Count counts.
type Snapshot int

// The count snapshots.
const (
	Total  Snapshot = iota // every task
	Recent                 // only the most recent task of each identifier
)

var snapshotNames = []string{"TOTAL", "RECENT"}

// String returns the upper-case name of the snapshot, such as "TOTAL".
func (s Snapshot) String() string { return enumName(snapshotNames, "Snapshot", s) }

// Valid reports whether s is a defined snapshot.
func (s Snapshot) Valid() bool { return s == Total || s == Recent }

// ParseSnapshot parses a snapshot name such as "RECENT" (case-insensitive).
func ParseSnapshot(s string) (Snapshot, error) {
	return parseEnum[Snapshot](snapshotNames, "snapshot", s)
}
