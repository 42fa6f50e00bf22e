package taskproc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// ErrSettled refuses a second settlement of a batch: it was completed,
// failed or released already (also by a Stop that gave up on it).
var ErrSettled = errors.New("taskproc: batch already settled")

// A Batch is the tasks of one poll, handed to a Handler to be settled exactly
// once: completed with decisions (Complete, CompleteTx), failed (Fail) or
// released back to Ready (Release). A second settlement is refused with
// ErrSettled and changes nothing. The limiter slot of the poll is held until
// the batch is settled. A Batch is safe for use by many goroutines.
//
// A settlement is written while the owner holds the tasks: a write that
// fails for the database (a lost connection, a conflict) is tried again
// with backoff, and when it is not known whether it committed, what it
// wrote is read back first (see settle.go). A database error never becomes
// a task's result.
type Batch struct {
	topic  string
	tasks  []taskapi.Task // in poll order; the handler must not change it
	polled time.Time
	// ctx is the handler's: it ends when the runtime asks the handler to
	// stop (a Stop that ran out of time), when it gives up the batch, and
	// once the batch is settled.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// writes is the settlement's: it ends only when the runtime gives up
	// the batch (revoke), so that a settlement in progress when a Stop's
	// context ends is still written, within the grace.
	writes     context.Context
	stopWrites context.CancelCauseFunc
	settler    settler
	repo       any          // the Repository[Tx] that polled the batch, for follow-up pushes
	term       taskapi.Term // the term of leadership it was polled under; Number 0 for none
	state      atomic.Int32
	how        atomic.Value // string: how it was settled, for ErrSettled
	done       chan struct{}
	after      []string // topics to resume once the completion committed
	// live are the tasks that the current attempt of a completion writes:
	// the batch's, but those another owner took meanwhile; nil for all.
	live []taskapi.Task
	// marked are the tasks to retry or snooze instead of deciding them.
	marked sync.Map // taskapi.Task → afterwards
	// cancelled are the tasks that were cancelled while the batch ran
	// (see cancel.go), running the contexts of the tasks being decided one
	// by one, and perTask says that the handler decides task by task.
	cancelled sync.Map // sequence → the cause
	running   sync.Map // sequence → context.CancelCauseFunc
	perTask   atomic.Bool
	// parent is the batch this one is a part of (see split); nil for a
	// batch of a poll. parts is set once this batch is split.
	parent    *Batch
	parts     *parts
	partsOnce sync.Once
	// crew is the loop's crew of a per-task handler that runs b, nil when
	// the loop hands b to its handler on the loop (see crew.go); reserved
	// is what b holds of its room until the handler gives b to it, under
	// the crew's mu.
	crew     *crew
	reserved int
}

// The states of a batch.
const (
	pending int32 = iota
	settling
	settled
)

// settler writes the settlements of batches: the Manager that polled them.
type settler interface {
	// accepts reports whether completion is a completion function over
	// the settler's transaction type.
	accepts(completion any) bool
	// write writes how b is settled, and marks it settled.
	write(b *Batch, how settlement) error
	// handedOver counts the tasks of the settlements handed over and not
	// written (see handOver); nil for none.
	handedOver() *atomic.Int64
}

// An intent is what a settlement writes.
type intent int

const (
	toComplete intent = iota // the decisions of a completion function
	toFail                   // Failure for every task, with cause's text
	toRelease                // the tasks back to Ready, unprocessed
	toAbandon                // nothing: a fenced owner gives the batch up
)

// settlement is how a batch is to be settled.
type settlement struct {
	intent     intent
	completion any   // toComplete: func(ctx) or func(ctx, Tx) (Decisions, error)
	cause      error // toFail: the error; toRelease, toAbandon: why the runtime gave it up, if it did
}

// giveUp is how the runtime settles a batch it gives up for cause: a fenced
// owner writes nothing (another process may have taken its tasks), else the
// tasks go back to Ready.
func giveUp(cause error) settlement {
	if errors.Is(cause, ErrFenced) {
		return settlement{intent: toAbandon, cause: cause}
	}
	return settlement{intent: toRelease, cause: cause}
}

// Topic returns the batch's topic.
func (b *Batch) Topic() string { return b.topic }

// Tasks returns the tasks of the batch in poll order, but those the
// runtime learnt were cancelled while the batch ran (see Canceller): call
// it again where a cancellation matters, inside a CompleteTx function say,
// rather than keep an earlier answer. The slice must not be changed.
func (b *Batch) Tasks() []taskapi.Task { return b.withoutCancelled(b.tasks) }

// Done returns a channel that is closed once the batch is settled.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Complete completes the batch with decisions, in one transaction of its
// own, and returns once they are written. A decision for a task not in the
// batch fails the whole batch, naming the unknown tasks, and a decision the
// database refuses (an output that is not text) fails it too; Complete
// returns the reason. A task without a decision ends with Failure and an
// output that says so. A failure of the database (a lost connection, a
// conflict) is no reason: the completion is written again, with backoff,
// once it was read back that the failed attempt did not commit, for as long
// as this owner holds the tasks. When the runtime gives the batch up
// meanwhile (a Stop that ran out of time, a lost term, a fenced owner), its
// tasks go back to Ready and Complete says so. When another owner took every
// task (they were expired, say), nothing is written, and Complete returns
// an error that errors.Is taskapi.ErrNotActive; tasks another owner took are
// left out of a completion of the others.
func (b *Batch) Complete(decisions Decisions) error {
	return b.settle(settlement{intent: toComplete, completion: func(context.Context) (Decisions, error) { return decisions, nil }})
}

// CompleteTx completes b inside one transaction: fn runs in it first, and may
// write the caller's own data through tx, then the repository records the
// decisions fn returned (as Complete does). fn runs again only when an
// earlier transaction of it failed for the database and was read back not
// to have committed, so that what it writes commits exactly once. When fn
// returns an error or panics, nothing of it is committed, and the batch's
// tasks are decided by the error as a TaskFunc's error decides a task (see
// TaskFunc): Transient retries them, Snooze snoozes them, a ResultError gives
// its result, any other error fails them; CompleteTx returns the error.
// What fn writes for a cancelled task never commits: a task cancelled
// while fn runs makes the database refuse the transaction, and fn runs
// again for the other tasks; fn should decide the tasks that b.Tasks()
// lists when it runs, for a decision of a task the runtime knew was
// cancelled before fn ran rolls fn's transaction back and gives the other
// tasks back to Ready, and CompleteTx returns an error that wraps
// taskapi.ErrCancelled. Tx
// must be the transaction type of the runtime that polled b, else
// CompleteTx returns an ErrInvalidArgument and b stays unsettled.
func CompleteTx[Tx any](b *Batch, fn func(ctx context.Context, tx Tx) (Decisions, error)) error {
	if !b.settler.accepts(fn) {
		var tx Tx
		return fmt.Errorf("taskproc: complete a batch of %q with a transaction of type %T: %w", b.topic, tx, taskapi.ErrInvalidArgument)
	}
	return b.settle(settlement{intent: toComplete, completion: fn})
}

// Fail completes every task of the batch with Failure and cause's text as
// output, in a transaction of its own, written as Complete writes; a
// Transient or Snooze cause retries or snoozes them instead.
func (b *Batch) Fail(cause error) error {
	if cause == nil {
		cause = errors.New("failed without a reason")
	}
	if a, ok := afterwardsOf(cause); ok { // a retry or a snooze of every task
		for _, task := range b.tasks {
			b.marked.Store(task, a)
		}
		return b.settle(settlement{intent: toComplete, completion: func(context.Context) (Decisions, error) { return nil, nil }})
	}
	return b.settle(settlement{intent: toFail, cause: cause})
}

// Release gives the tasks of the batch back as Ready, as if they had not
// been polled: they were interrupted, not processed.
func (b *Batch) Release() error {
	return b.settle(settlement{intent: toRelease})
}

// Retry marks the run of task as failed transiently with cause, as a
// TaskFunc does by returning Transient(cause): when the batch is completed,
// task is retried (see RetryPolicy) whatever its decision. It returns an
// ErrInvalidArgument for a task that is not in the batch or a nil cause,
// and ErrSettled once the batch is settled.
func (b *Batch) Retry(task taskapi.Task, cause error) error {
	if cause == nil {
		return fmt.Errorf("taskproc: retry task %d without a cause: %w", task.Sequence, taskapi.ErrInvalidArgument)
	}
	return b.mark(task, afterwards{cause: cause})
}

// Snooze marks task to be given back as Ready, due d from now, when the
// batch is completed, whatever its decision, as a TaskFunc does by
// returning Snooze(d). It returns an ErrInvalidArgument for a task that is
// not in the batch, and ErrSettled once the batch is settled.
func (b *Batch) Snooze(task taskapi.Task, d time.Duration) error {
	return b.mark(task, afterwards{after: max(d, 0)})
}

// mark records what becomes of task.
func (b *Batch) mark(task taskapi.Task, a afterwards) error {
	if !slices.Contains(b.tasks, task) {
		return notInBatch(task)
	}
	if b.state.Load() != pending {
		return fmt.Errorf("%w: mark task %d of topic %q", ErrSettled, task.Sequence, b.topic)
	}
	b.marked.Store(task, a)
	return nil
}

// markedTasks returns the marked tasks among tasks.
func (b *Batch) markedTasks(tasks []taskapi.Task) map[taskapi.Task]afterwards {
	marked := map[taskapi.Task]afterwards{}
	for _, task := range tasks {
		if a, ok := b.marked.Load(task); ok {
			marked[task] = a.(afterwards)
		}
	}
	return marked
}

// settle writes how unless the batch was settled, and marks it settled.
func (b *Batch) settle(how settlement) error {
	if !b.state.CompareAndSwap(pending, settling) {
		return b.refusal()
	}
	return b.settler.write(b, how)
}

// refusal is the error of a settlement of a batch settled already.
func (b *Batch) refusal() error {
	how, _ := b.how.Load().(string)
	if how == "" {
		how = "being settled"
	}
	return fmt.Errorf("%w: %s (topic %q)", ErrSettled, how, b.topic)
}

// revoke gives b up for cause: its handler's context ends, a settlement
// being written stops trying (and gives the tasks back, see write), and an
// unsettled batch is given back at once. A later settlement is refused.
func (b *Batch) revoke(cause error) {
	// First take the batch: its handler's context, a child of writes', ends
	// with stopWrites, and a settlement the handler makes on seeing that is
	// refused. A settlement begun before sees the end of writes (see write).
	b.partsOnce.Do(func() {}) // no split begins after this
	unsettled := b.state.CompareAndSwap(pending, settling)
	b.stopWrites(cause)
	b.cancel(cause)
	switch {
	case unsettled:
		_ = b.settler.write(b, giveUp(cause))
	case b.parts != nil:
		b.revokeParts(giveUp(cause))
	}
}

// revoked returns why the runtime gave b up, nil while it holds it.
func (b *Batch) revoked() error {
	if b.writes.Err() == nil {
		return nil
	}
	return context.Cause(b.writes)
}

// finish marks the batch settled, how it was, and lets go of its context.
// It returns the batch of a poll that ended with it: b, or, for a part, its
// parent once its last part is settled; nil when none did.
func (b *Batch) finish(how string) *Batch {
	b.how.Store(how)
	b.state.Store(settled)
	b.cancel(ErrSettled)
	b.stopWrites(ErrSettled)
	close(b.done)
	if b.parent != nil {
		return b.parent.partDone()
	}
	return b
}

// attemptTasks returns the tasks that the current attempt of a completion
// writes.
func (b *Batch) attemptTasks() []taskapi.Task {
	if b.live == nil {
		return b.tasks
	}
	return b.live
}

// resumeAfterCommit asks for topics to be resumed once the batch's
// completion committed; for completions that push follow-up tasks.
func (b *Batch) resumeAfterCommit(topics ...string) {
	b.after = append(b.after, topics...)
}

// ErrFenced is the cause with which a fenced owner gives up the batches it
// holds: it could not confirm its heartbeat for longer than the expiry, so
// another process may have expired and revived their tasks.
var ErrFenced = errors.New("taskproc: fenced: the owner could not confirm its heartbeat in time")

// ErrTermLost is the cause with which a batch polled under a term of
// leadership is given up when the term is lost (a renewal failed or came
// too late, or the owner fenced itself): its context ends, its tasks go back
// to Ready, and a later settlement is refused, so that nothing of the term
// runs on while another process leads.
var ErrTermLost = errors.New("taskproc: the term of leadership the batch was polled under was lost")
