package taskapi

import (
	"math"
	"strconv"
	"time"
)

// Limits on the length, in bytes, of names and texts.
const (
	MaxTopicLength      = 250 // a topic name
	MaxOwnerLength      = 250 // an owner name
	MaxIdentifierLength = 500 // a task identifier
	MaxReferenceLength  = 500 // a task reference
)

// Sequence bounds. Sequences are assigned from 1 upwards, so Inception lies
// before every task and MaxSequence after every task.
const (
	Inception   int64 = 0
	MaxSequence int64 = math.MaxInt64
)

// Unbounded is the range that holds every sequence.
var Unbounded = Range{From: Inception, To: MaxSequence}

// Range is an inclusive range of sequences. A range with From > To is empty.
type Range struct {
	From, To int64
}

// Contains reports whether sequence lies in r.
func (r Range) Contains(sequence int64) bool { return r.From <= sequence && sequence <= r.To }

// Empty reports whether r holds no sequence that a task can have.
func (r Range) Empty() bool { return r.From > r.To || r.To <= Inception }

// Task identifies a stored task. It is comparable and can be used as a map key.
type Task struct {
	Sequence   int64  // assigned by the database, increasing in insertion order
	Identifier string // non-empty, at most MaxIdentifierLength bytes
	Input      string // empty when absent
}

// Key returns a key of the task that stays the same across every run of
// it: its retries, its rescues after a crash, the runs of a completion
// function whose transaction did not commit. Give it as the idempotency key
// of what a handler does outside the database (a payment provider's
// charge, a mail service's send), so that a run that repeats one does not
// repeat its effect. It is made of the sequence, unique in the database
// ("task-" and the sequence in decimal); prefix it with a name of the
// database where several share one provider's account. A revival that
// recreates a task (ReviveAppend, ReviveSupersede, ReviveReplace) makes a
// new task, with a new key: the work is wanted again.
func (t Task) Key() string { return "task-" + strconv.FormatInt(t.Sequence, 10) }

// Creation describes a task to push.
type Creation struct {
	Identifier string // non-empty, at most MaxIdentifierLength bytes
	Input      string // empty when absent
	Reference  string // empty when absent, at most MaxReferenceLength bytes
	Suspended  bool   // push the task Suspended instead of Ready
	// NotBefore defers the task: Poll returns it no earlier than this time
	// on the database clock. Zero: at once. Kept to the microsecond; a
	// non-zero time must lie within the years MinYear to MaxYear.
	NotBefore time.Time
}

// The years within which a non-zero NotBefore must lie: what every
// supported database can store (MySQL's DATETIME is the narrowest).
const (
	MinYear = 1000
	MaxYear = 9999
)

// Decision is the outcome of processing a task. The zero Decision is
// Failure without an output; taskproc writes into such a task's output
// that its handler returned the zero Decision, so that a forgotten result
// does not fail a task without a word.
type Decision struct {
	Result Result
	Output string // empty when absent
}

// Completion pairs a polled task with its decision.
type Completion struct {
	Task     Task
	Decision Decision
}

// Assignment sets the result of a task that is no longer Active.
type Assignment struct {
	Task   Task
	Result Result
	// Output, when not empty, replaces the task's output (an operator's
	// note, say, or why the runtime gave up on a task); empty keeps it.
	Output string
}

// Revival pairs a revived task with the task that carries on. They are equal
// for ReviveReset.
type Revival struct {
	Previous, Current Task
}

// Info is everything stored about a task.
type Info struct {
	Task
	State     State
	Descent   State  // the highest state the task was in before its current one
	Owner     string // the owner that polled it last; empty if never polled
	Reference string
	Output    string
	Created   time.Time // in UTC
	Completed time.Time // in UTC; zero when not completed
	NotBefore time.Time // in UTC; zero when the task was never deferred
	// Revivals counts how often this task, or the tasks it was revived
	// from, were revived.
	Revivals int
}

// Listing filters the tasks that Page returns. An empty field filters nothing.
type Listing struct {
	States     []State
	Reference  string
	Identifier string
}

// Counting filters the tasks that Count counts. An empty field filters nothing.
type Counting struct {
	Topic      string
	States     []State
	Reference  string
	Identifier string
}

// Summary counts the tasks of one state of one topic.
type Summary struct {
	Count int64 // number of tasks
	Bound int64 // highest sequence counted
}
