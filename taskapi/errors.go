package taskapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Implementations wrap them with context such as the topic
// and the sequence; test for them with errors.Is.
var (
	// ErrUnknownTopic reports a push to a topic that was not initialized.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrUnknownOwner reports a call that needs a registered owner, such as
	// Poll or Heartbeat, by an owner that is not registered, or that another
	// repository registered anew under the same name.
	ErrUnknownOwner = errors.New("unknown owner")
	// ErrNotActive reports a completion of a task that is not Active and
	// owned by this owner. The error is a *StateError that names the tasks.
	ErrNotActive = errors.New("task not active")
	// ErrStateMismatch reports a revival or reassignment of a task that is
	// not in the expected state, or not in the topic at all. The error is a
	// *StateError that names the tasks.
	ErrStateMismatch = errors.New("task state mismatch")
	// ErrInvalidArgument reports bad input: an empty or over-long name, a NUL
	// byte, invalid UTF-8, a negative duration, an unknown enum value, a
	// state the call does not allow, or options that contradict each other.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrConflict reports that the database aborted the call to resolve a
	// deadlock or a serialization conflict (PostgreSQL 40001 and 40P01,
	// MySQL 1213 and 1205, SQLite BUSY). A call that ran in a transaction of
	// its own has already retried a few times; inside the caller's
	// transaction the caller rolls back and retries the whole transaction.
	ErrConflict = errors.New("conflict with a concurrent transaction")
	// ErrUnavailable reports that the call could not reach the database, or
	// that the connection broke, or was closed by the server, while the
	// call ran (a network failure, a terminated session, a server shutting
	// down), or that the server refused to serve it (too many connections,
	// a statement timeout, a write refused by a standby or a read-only
	// server). Unlike the other sentinels it says nothing of the call's
	// arguments: the same call may succeed once the database answers
	// again. A COMMIT that failed so may have committed all the same:
	// read back what it wrote before doing it again. So may a call whose
	// context ended while its statement ran, when the server did not stop
	// the statement in time: its error wraps ErrUnavailable besides the
	// context's error.
	ErrUnavailable = errors.New("database unavailable")
	// ErrPermission reports that the database refused the call's role or
	// user a privilege the call needs (PostgreSQL 42501; MySQL 1044, 1142,
	// 1143, 1227, 1370): the call changed nothing, and the driver's error in
	// the chain names the privilege and the table. It is no failure of the
	// database: the same call fails so until an administrator grants the
	// privilege (docs/operating.md lists the grants of an application role).
	ErrPermission = errors.New("permission denied")
)

// StateError names the tasks that made a call fail because they were not in
// the state the call needs: not Active and owned by this owner (Complete,
// Err is ErrNotActive), or not in Expired to Succeeded (ReviveTasks and
// Reassign, Err is ErrStateMismatch). The call changed nothing; a caller
// that reaches the error with errors.As can leave these tasks out and call
// again for the others.
type StateError struct {
	Topic     string  // the topic of the call
	Sequences []int64 // the tasks at fault, ascending
	Err       error   // ErrNotActive or ErrStateMismatch
}

// shownSequences is how many sequences Error lists before it counts the rest.
const shownSequences = 8

// Error lists the tasks at fault, at most a few of them, and the reason.
func (e *StateError) Error() string {
	var b strings.Builder
	if len(e.Sequences) == 1 {
		b.WriteString("task ")
	} else {
		b.WriteString("tasks ")
	}
	for i, s := range e.Sequences[:min(len(e.Sequences), shownSequences)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	if n := len(e.Sequences); n > shownSequences {
		fmt.Fprintf(&b, " and %d more", n-shownSequences)
	}
	return b.String() + ": " + e.Err.Error()
}

// Unwrap returns the sentinel, ErrNotActive or ErrStateMismatch.
func (e *StateError) Unwrap() error { return e.Err }
