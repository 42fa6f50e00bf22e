package taskapi

import (
	"context"
	"time"
)

// Sink receives new tasks.
type Sink[Tx any] interface {
	// Push stores creations as tasks of topic, in slice order with increasing
	// sequences, and returns them in creation order. insertion says what
	// happens to older tasks with the same identifier. Pushing no creations
	// does nothing. Pushing to a topic that was not initialized fails with
	// ErrUnknownTopic.
	Push(ctx context.Context, tx Tx, topic string, insertion Insertion, creations ...Creation) ([]Task, error)
}

// Source hands out tasks to process and takes their results.
type Source[Tx any] interface {
	// Poll marks up to size Ready tasks of topic that are due (no NotBefore
	// in the future) Active with this owner and returns them in poll order.
	// opts are an Order, a Condition and a Term; the default is FIFO,
	// Unconditional, with no term. Fails with ErrUnknownOwner when this
	// owner is not registered.
	Poll(ctx context.Context, tx Tx, topic string, size int, opts ...PollOption) ([]Task, error)
	// Complete records the decisions. Every task must be Active and owned by
	// this owner, else it fails with ErrNotActive and changes nothing.
	Complete(ctx context.Context, tx Tx, topic string, completions ...Completion) error
}

// Releaser gives tasks back to the queue.
type Releaser[Tx any] interface {
	// Release makes Active tasks of this owner Ready again, as if they had
	// not been polled: no owner, descent, output and completion time as they
	// were, no result recorded. A consumer releases what it was interrupted
	// on (stopping, say) rather than failing it. Every task must be Active
	// and owned by this owner, else it fails with ErrNotActive (a
	// *StateError that names the others) and changes nothing.
	Release(ctx context.Context, tx Tx, topic string, tasks ...Task) error
}

// Reviver brings finished or expired tasks back.
type Reviver[Tx any] interface {
	// Revive revives up to size tasks of topic in state (Expired to
	// Succeeded) within span, in ascending sequence order.
	Revive(ctx context.Context, tx Tx, topic string, how Revivification, state State, span Range, size int) ([]Revival, error)
}

// Juncture releases suspended tasks once their group is complete.
type Juncture[Tx any] interface {
	// Join releases, for each group whose identifiers all have a matching
	// task (see Junction), the group's Suspended tasks to Ready. It returns
	// the identifiers of the groups in which a task was released.
	Join(ctx context.Context, tx Tx, topic string, junction Junction, groups ...[]string) ([]string, error)
}

// Repository is a complete task repository. Tx is the caller's database
// handle: a transaction, a connection or a pool of the implementation's
// driver. A Repository is safe for concurrent use.
type Repository[Tx any] interface {
	Sink[Tx]
	Source[Tx]
	Releaser[Tx]
	Reviver[Tx]
	Juncture[Tx]

	// Owner returns the name of this owner.
	Owner() string
	// Register registers this owner with a fresh heartbeat and reports
	// whether it was newly registered.
	Register(ctx context.Context, tx Tx) (bool, error)
	// Heartbeat refreshes this owner's heartbeat; ErrUnknownOwner if it is
	// not registered.
	Heartbeat(ctx context.Context, tx Tx) error
	// Owners lists the other owners with a heartbeat within the last
	// duration, sorted.
	Owners(ctx context.Context, tx Tx, within time.Duration) ([]string, error)
	// Expire marks the Active tasks of other owners silent for longer than
	// after Expired and returns how many.
	Expire(ctx context.Context, tx Tx, after time.Duration) (int64, error)
	// PurgeOwners deletes the other owners silent for longer than after that
	// hold no Active task, and returns how many.
	PurgeOwners(ctx context.Context, tx Tx, after time.Duration) (int64, error)
	// Initialize registers topic and reports whether it was newly registered.
	Initialize(ctx context.Context, tx Tx, topic string) (bool, error)
	// Topics lists the registered topics, sorted.
	Topics(ctx context.Context, tx Tx) ([]string, error)
	// Destroy drops all tasks of topic and the topic itself, and reports
	// whether it existed.
	Destroy(ctx context.Context, tx Tx, topic string) (bool, error)
	// PurgeAll drops all tasks of topic and keeps the topic.
	PurgeAll(ctx context.Context, tx Tx, topic string) error
	// Purge deletes the tasks of topic within span in the given states
	// (Failed to Cancelled when none are given) and returns how many.
	Purge(ctx context.Context, tx Tx, topic string, span Range, states ...State) (int64, error)
	// Refresh refreshes the planner statistics where the database has them.
	Refresh(ctx context.Context, tx Tx) error
	// ReviveTasks revives the given tasks, which must each be in Expired to
	// Succeeded, else it fails with ErrStateMismatch and changes nothing.
	ReviveTasks(ctx context.Context, tx Tx, topic string, how Revivification, tasks ...Task) ([]Revival, error)
	// Reassign sets each task, which must be in Expired to Succeeded, to the
	// state of its result; else it fails with ErrStateMismatch.
	Reassign(ctx context.Context, tx Tx, topic string, assignments ...Assignment) error
	// ReassignAll moves every task of topic in state from within span to the
	// state of result to, and returns how many.
	ReassignAll(ctx context.Context, tx Tx, topic string, from State, to Result, span Range) (int64, error)
	// Page lists up to size tasks of topic matching listing, walking from
	// cursor in direction.
	Page(ctx context.Context, tx Tx, topic string, listing Listing, cursor int64, size int, direction Direction) ([]Info, error)
	// Lookup finds the task of topic with sequence.
	Lookup(ctx context.Context, tx Tx, topic string, sequence int64) (Info, bool, error)
	// Count counts tasks per registered topic and state within span.
	Count(ctx context.Context, tx Tx, snapshot Snapshot, filter Counting, span Range) (map[string]map[State]Summary, error)
	// Results counts completed tasks per registered topic and result, with a
	// completion time within [from, to]; a zero time is unbounded.
	Results(ctx context.Context, tx Tx, from, to time.Time) (map[string]map[Result]int64, error)
	// Resolve turns a time into a sequence: the lowest sequence created at or
	// after at, or MaxSequence (preceding false); the highest sequence
	// created at or before at, or Inception (preceding true).
	Resolve(ctx context.Context, tx Tx, at time.Time, preceding bool) (int64, error)
	// Defer sets NotBefore of the given tasks, which must each be Ready in
	// topic (else ErrStateMismatch and nothing changes): Poll returns them
	// no earlier than until. A zero until makes them pollable at once.
	Defer(ctx context.Context, tx Tx, topic string, until time.Time, tasks ...Task) error
	// NextDue returns the earliest NotBefore later than now (database
	// clock) among the Ready tasks of topic, zero when none waits: when a
	// poll of topic will next find a deferred task due. Tasks already due
	// do not count. It reads an index, whatever the number of tasks.
	NextDue(ctx context.Context, tx Tx, topic string) (time.Time, error)
	Scheduler[Tx]
}

// Scheduler keeps the marks of periodic schedules: for each named schedule
// of a topic, the last period it pushed a task for. A process that runs the
// schedule advances the mark by compare-and-set in the transaction that
// pushes the period's task, so that every period is pushed once however
// many processes run it, with no leader. Marks are kept in UTC to the
// microsecond.
type Scheduler[Tx any] interface {
	// Mark returns the mark of the schedule name of topic, zero when it has
	// none yet.
	Mark(ctx context.Context, tx Tx, topic, name string) (time.Time, error)
	// Advance sets the mark of the schedule name of topic to to, if the
	// mark is from now (a zero from: if the schedule has no mark yet), and
	// reports whether it did. to must be later than from.
	Advance(ctx context.Context, tx Tx, topic, name string, from, to time.Time) (bool, error)
}

// PollOption is an option of Poll: an Order, a Condition, AwaitRevival, a
// Term or a *LimitNote.
type PollOption interface {
	pollOption()
}

func (Order) pollOption()     {}
func (Condition) pollOption() {}

// An AwaitRevival given to Poll makes a conditional poll also skip a
// candidate while a task of its identifier is Expired, as it does while
// one is Active: for consumers that revive their expired tasks in place
// (ReviveReset; taskproc's WithRevival). Under SingularByIdentifier an
// identifier's order then holds across the crash of a consumer: its
// expired task is revived, in its place, before a later task of the
// identifier can be polled. Without revival an expired task holds its
// identifier back until it is revived or reassigned by hand. The other
// SingularByIdentifier conditions skip a candidate behind an Expired task
// anyway, and an unconditional poll skips none: for them it changes
// nothing. Give it as AwaitRevival{}; given twice, it says the same once.
type AwaitRevival struct{}

func (AwaitRevival) pollOption() {}

// String returns "AWAIT_REVIVAL", in the style of the names of the other
// poll options.
func (AwaitRevival) String() string { return "AWAIT_REVIVAL" }

// A Term given to Poll makes the poll claim tasks only while the term is
// current at the poll's statement, on the database clock: the term of this
// owner for the polled topic, with the topic's current Number, not expired
// and not conceded. Otherwise the poll returns nothing. No new term of the
// topic begins before the poll's transaction has ended, so the tasks that
// a poll under a term claims are claimed under that term, never under the
// next one: an exclusive consumer (see Leader) never claims after another
// process took its place; Leader.Hold keeps the transaction that settles
// what it claimed to the same term. A Term of another topic or owner is
// ErrInvalidArgument.
func (Term) pollOption() {}
