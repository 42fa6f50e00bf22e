package taskproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A settlement is written by one loop (write) that keeps the promise that a
// database error never becomes a task's result:
//
//   - A write that fails for the database is tried again, with backoff,
//     while the owner holds the tasks: until it is written, or the runtime
//     gives the batch up (revoke: a Stop that ran out of time, a fenced
//     owner, a lost term).
//   - Before it is tried again, what the failed attempt wrote is read back
//     (readBack): its COMMIT may have gone through although the connection
//     broke. Only when the tasks are still Active under this owner did it
//     not commit; only then does a completion function (CompleteTx) run
//     again, so that the caller's writes in it commit once.
//   - A settlement the database refuses for what it says (a decision for
//     a task not in the batch, an output that is not text, a completion
//     function's own error) fails the batch instead; the failure is
//     written the same way.
//   - Once the batch is given up, its tasks go back to Ready (a fenced owner
//     writes nothing); when even that cannot be written, they are kept and
//     given back once the database answers again (see tidy).
//
// A write that may make tasks Ready again (a release, a retry, a snooze)
// holds the Manager's polling lock from its attempt to its read-back, so
// that none of its own polls can take such a task meanwhile and make the
// read-back see it Active under this owner as if it had not been written.

// cleanupTimeout bounds the writes and reads of a settlement once the batch
// was given up.
const cleanupTimeout = 10 * time.Second

// cleanupTime is how long a settlement of a batch that was given up may
// still read and write: the grace, at least a second, at most
// cleanupTimeout.
func (m *Manager[Tx]) cleanupTime() time.Duration {
	return min(cleanupTimeout, max(m.s.grace, time.Second))
}

// noDecision is the output of a task that its completion did not decide.
const noDecision = "taskproc: no decision for the task"

// errLost is the error of a settlement that found every task of its batch
// taken by another owner (expired and revived meanwhile, say): it wrote
// nothing.
var errLost = errors.New("taskproc: every task of the batch was taken by another owner before the settlement was written; nothing was written")

// batchSettler settles the batches of one run of a Manager, with the
// repository that polled them.
type batchSettler[Tx any] struct {
	m    *Manager[Tx]
	r    *run
	repo Repository[Tx]
	slot func()
}

func (s *batchSettler[Tx]) accepts(completion any) bool {
	_, ok := completion.(func(context.Context, Tx) (Decisions, error))
	return ok
}

// outcome is what one attempt of a settlement did.
type outcome struct {
	err       error
	wrote     bool            // the attempt wrote all it had to and asked to commit: only then may it have committed
	fnErr     error           // the completion function's own error
	refused   bool            // err is the database's or the runtime's refusal of what the settlement says
	decided   Decisions       // the decisions written
	later     bool            // tasks were retried or snoozed
	evidence  *taskapi.Task   // a task whose state tells whether the attempt committed; nil when any state would do
	completes []taskapi.State // the states the evidence may be in once written
}

// write writes how b is settled, trying again as the package's comment
// says, and marks b settled.
func (s *batchSettler[Tx]) write(b *Batch, how settlement) error {
	live := b.tasks
	bo := s.m.backoff()
	var refusal error // why a completion became a failure
	for {
		if cause := b.revoked(); cause != nil && how.intent != toAbandon && (how.intent != toRelease || errors.Is(cause, ErrFenced)) {
			how = giveUp(cause) // a fenced owner writes nothing, not even a release
		}
		if how.intent == toAbandon {
			return s.abandon(b, live, how.cause)
		}
		v := s.try(b, how, live)
		switch v.verdict {
		case committed:
			return s.written(b, how, live, v.o, refusal)
		case refusedCompletion:
			refusal = fmt.Errorf("taskproc: complete a batch of %q: %w", b.topic, v.o.err)
			how = b.decidedBy(cmp.Or(v.o.fnErr, refusal), live)
		case refusedSettlement: // a failure or a release the database refuses: give the tasks back
			s.m.s.logger.Error("taskproc: the database refused a settlement", "topic", b.topic, "err", v.o.err)
			return s.lose(b, live, fmt.Errorf("taskproc: settle a batch of %q: %w", b.topic, v.o.err))
		case unknown: // the database could not tell: given up
			return s.lose(b, live, v.err)
		case taken:
			return s.lost(b, how, refusal)
		case partlyTaken:
			s.m.s.logger.Warn("taskproc: tasks of a batch are not this owner's any more", "topic", b.topic, "sequences", v.stale)
			live = v.held
		case notCommitted:
			live = v.held
			wait := bo.next()
			s.retrying(b, live, v.o.err, wait)
			if b.revoked() == nil {
				_ = sleep(b.writes, wait)
			}
		}
	}
}

// A verdict is what an attempt of a settlement came to.
type verdict int

const (
	committed         verdict = iota // written
	notCommitted                     // a failure of the database, read back not to have committed: try again
	refusedCompletion                // the completion function or the database refused its decisions
	refusedSettlement                // the database refused a failure or a release
	partlyTaken                      // some tasks are another owner's now: try again without them
	taken                            // every task is another owner's now: nothing written
	unknown                          // the database could not tell whether it committed
)

// tried is an attempt's verdict, with its outcome, the tasks this owner
// still holds, those another owner took, and the error of a read-back
// that failed.
type tried struct {
	verdict verdict
	o       outcome
	held    []taskapi.Task
	stale   []int64
	err     error
}

// try makes one attempt at writing how for live and, when it failed for the
// database, finds out whether it committed. It holds the polling lock that
// lockFor takes from the attempt to its read-back.
func (s *batchSettler[Tx]) try(b *Batch, how settlement, live []taskapi.Task) tried {
	ctx, cancel := s.context(b)
	defer cancel()
	defer s.lockFor(b, how, live)()
	o := s.attempt(ctx, b, how, live)
	switch {
	case o.err == nil:
		return tried{verdict: committed, o: o}
	case o.refused && how.intent == toComplete:
		return tried{verdict: refusedCompletion, o: o}
	case o.refused:
		return tried{verdict: refusedSettlement, o: o}
	}
	if stale := staleOf(o.err); stale != nil {
		if held := without(live, stale); len(held) > 0 {
			return tried{verdict: partlyTaken, o: o, held: held, stale: stale}
		}
		return tried{verdict: taken, o: o}
	}
	done, held, err := s.settled(ctx, b, how, live, o)
	switch {
	case err != nil:
		return tried{verdict: unknown, o: o, err: err}
	case done:
		return tried{verdict: committed, o: o}
	case len(held) == 0:
		return tried{verdict: taken, o: o}
	}
	return tried{verdict: notCommitted, o: o, held: held}
}

// decidedBy is how the tasks of b in live are settled when the completion
// function failed with err, rolled back, or the database refused what it
// decided: as a TaskFunc's error decides a task. A retry or a snooze is
// written as a completion that decides no task, an interrupted run is
// released, a ResultError gives its result, and any other error fails the
// tasks with its text.
func (b *Batch) decidedBy(err error, live []taskapi.Task) settlement {
	if errors.Is(err, errInterrupted) {
		return settlement{intent: toRelease}
	}
	if a, ok := afterwardsOf(err); ok {
		for _, task := range live {
			b.marked.Store(task, a)
		}
		return settlement{intent: toComplete, completion: func(context.Context) (Decisions, error) { return nil, nil }}
	}
	if d := decisionOf(taskapi.Decision{}, err); d.Result != taskapi.Failure {
		return settlement{intent: toComplete, completion: func(context.Context) (Decisions, error) {
			decisions := make(Decisions, len(live))
			for _, task := range live {
				decisions[task] = d
			}
			return decisions, nil
		}}
	}
	return settlement{intent: toFail, cause: err}
}

// errInterrupted is the error of a completion function whose run its
// context's end cut short: its tasks go back to Ready, no attempt counted.
var errInterrupted = errors.New("taskproc: interrupted")

// context returns the context of an attempt: the batch's writes', or, once
// the batch was given up, a short one for giving its tasks back.
func (s *batchSettler[Tx]) context(b *Batch) (context.Context, context.CancelFunc) {
	if b.revoked() == nil {
		return context.WithCancel(b.writes)
	}
	return context.WithTimeout(context.WithoutCancel(b.writes), s.m.cleanupTime())
}

// lockFor takes the Manager's polling lock for a write that may make tasks
// Ready again, and returns what gives it back.
func (s *batchSettler[Tx]) lockFor(b *Batch, how settlement, live []taskapi.Task) func() {
	if how.intent == toRelease || (how.intent == toComplete && len(b.markedTasks(live)) > 0) {
		s.m.polling.Lock()
		return s.m.polling.Unlock
	}
	return func() {}
}

// attempt writes how for live in one transaction.
func (s *batchSettler[Tx]) attempt(ctx context.Context, b *Batch, how settlement, live []taskapi.Task) outcome {
	var o outcome
	o.err = s.m.transact(ctx, func(tx Tx) error {
		o = outcome{}
		var err error
		switch how.intent {
		case toComplete:
			err = s.complete(ctx, tx, b, how.completion, live, &o)
		case toFail:
			o.evidence, o.completes = &live[0], []taskapi.State{taskapi.Failed}
			err = s.repo.Complete(ctx, tx, b.topic, failures(live, how.cause)...)
		default:
			err = s.repo.Release(ctx, tx, b.topic, live...)
		}
		o.wrote = err == nil
		return err
	})
	if o.err != nil && !o.refused {
		// A run that its context interrupted is given back, whatever the
		// transaction's end met: it never committed.
		o.refused = errors.Is(o.fnErr, errInterrupted) || (refused(o.err, o.fnErr) && ctx.Err() == nil)
	}
	return o
}

// complete runs a completion function and records its decisions in tx.
func (s *batchSettler[Tx]) complete(ctx context.Context, tx Tx, b *Batch, completion any, live []taskapi.Task, o *outcome) error {
	b.after, b.live = nil, live
	d, err := runCompletion(ctx, tx, completion)
	if err != nil {
		o.fnErr = err
		return err
	}
	completions, err := completionsOf(b.tasks, live, d)
	if err != nil {
		o.refused = true
		return err
	}
	marked := b.markedTasks(live)
	o.later = len(marked) > 0
	completions = slices.DeleteFunc(completions, func(c taskapi.Completion) bool { _, ok := marked[c.Task]; return ok })
	if len(completions) > 0 {
		o.evidence = &completions[0].Task
		o.completes = []taskapi.State{completions[0].Decision.Result.State()}
	}
	if err := s.repo.Complete(ctx, tx, b.topic, completions...); err != nil {
		return err
	}
	retried, err := s.later(ctx, tx, b.topic, marked)
	o.decided = decisionsOf(append(completions, retried...))
	return err
}

// refused reports whether err, the error of an attempt, is a refusal of
// what the settlement says rather than a failure of the database: the
// completion function's own error (fnErr), unless the transaction's end
// says the connection broke or it conflicted; a bad argument; a topic that
// is not there.
func refused(err, fnErr error) bool {
	switch {
	case errors.Is(err, taskapi.ErrUnavailable), errors.Is(err, taskapi.ErrConflict):
		return false
	case fnErr != nil:
		return true
	}
	return errors.Is(err, taskapi.ErrInvalidArgument) || errors.Is(err, taskapi.ErrUnknownTopic)
}

// staleOf returns the sequences that err says are not this owner's Active
// tasks any more, nil when it says nothing of the kind.
func staleOf(err error) []int64 {
	var stale *taskapi.StateError
	if errors.As(err, &stale) && errors.Is(err, taskapi.ErrNotActive) && len(stale.Sequences) > 0 {
		return stale.Sequences
	}
	return nil
}

// settled finds out whether an attempt that failed with o.err committed,
// and which of live this owner still holds, reading back until the
// database answers (or, once the batch is given up, for a short while). A
// conflict is known not to have committed. It waits with backoff between
// reads.
func (s *batchSettler[Tx]) settled(ctx context.Context, b *Batch, how settlement, live []taskapi.Task, o outcome) (committed bool, held []taskapi.Task, err error) {
	if errors.Is(o.err, taskapi.ErrConflict) && !errors.Is(o.err, taskapi.ErrUnavailable) {
		return false, live, nil
	}
	bo := s.m.backoff()
	for {
		rctx := ctx
		if ctx.Err() != nil { // the attempt was cut short: read back all the same, briefly
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.m.cleanupTime())
			defer cancel()
		}
		committed, held, err = s.readBack(rctx, how, live, o)
		if err == nil || rctx.Err() != nil {
			return committed, held, err
		}
		wait := bo.next()
		s.retrying(b, live, err, wait)
		if sleep(ctx, wait) != nil && b.revoked() != nil {
			return false, nil, fmt.Errorf("taskproc: read back the settlement of a batch of %q: %w", b.topic, err)
		}
	}
}

// readBack tells whether an attempt committed, and which of live this
// owner still holds: not when the attempt never got to ask for its commit
// (its BEGIN or a statement failed), not while this owner still holds any
// of live Active (a transaction writes all or nothing), else by the state
// of its evidence, a task it completed; without one, a write that made the
// tasks Ready again went through or another owner took them, and either way
// they are not this owner's.
func (s *batchSettler[Tx]) readBack(ctx context.Context, how settlement, live []taskapi.Task, o outcome) (bool, []taskapi.Task, error) {
	lo, hi := span(live)
	owned, err := s.m.ownActive(ctx, s.repo, taskapi.Range{From: lo, To: hi})
	if err != nil {
		return false, nil, err
	}
	held := slices.DeleteFunc(slices.Clone(live), func(t taskapi.Task) bool { return !slices.Contains(owned, t) })
	if !o.wrote || len(held) > 0 || o.evidence == nil {
		return o.wrote && len(held) == 0, held, nil
	}
	var info taskapi.Info
	var found bool
	err = s.m.transact(ctx, func(tx Tx) (err error) {
		info, found, err = s.repo.Lookup(ctx, tx, s.m.topic, o.evidence.Sequence)
		return err
	})
	if err != nil {
		return false, nil, err
	}
	return found && info.Owner == s.repo.Owner() && slices.Contains(o.completes, info.State), nil, nil
}

// retrying tells that an attempt, or its read-back, failed with err and is
// tried again after wait.
func (s *batchSettler[Tx]) retrying(b *Batch, live []taskapi.Task, err error, wait time.Duration) {
	s.m.stats.retried.Add(1)
	s.m.s.notify(Event{Kind: EventSettleRetried, Topic: b.topic, Tasks: live, Err: err, Duration: wait})
}

// span returns the lowest and highest sequence of tasks.
func span(tasks []taskapi.Task) (lo, hi int64) {
	lo, hi = tasks[0].Sequence, tasks[0].Sequence
	for _, t := range tasks[1:] {
		lo, hi = min(lo, t.Sequence), max(hi, t.Sequence)
	}
	return lo, hi
}

// written finishes b once how was written for live.
func (s *batchSettler[Tx]) written(b *Batch, how settlement, live []taskapi.Task, o outcome, refusal error) error {
	switch how.intent {
	case toComplete:
		if o.later {
			s.m.due.touch() // the next due time may be theirs
		}
		s.finish(b, "completed", Event{Kind: EventCompleted, Tasks: live, Decisions: o.decided})
		s.m.resume(b.after)
		return refusal
	case toFail:
		s.finish(b, "failed", Event{Kind: EventFailed, Tasks: live, Err: how.cause})
		return refusal
	}
	s.finish(b, "released", Event{Kind: EventReleased, Tasks: live, Err: how.cause})
	return cmp.Or(givenUp(how.cause), refusal)
}

// givenUp is the error of a settlement that the runtime gave up for cause
// while it was written, nil for none.
func givenUp(cause error) error {
	if cause == nil {
		return nil
	}
	return fmt.Errorf("taskproc: the batch was given up before its settlement was written, and its tasks given back: %w", cause)
}

// lost finishes b when another owner took every task of it.
func (s *batchSettler[Tx]) lost(b *Batch, how settlement, refusal error) error {
	s.finish(b, "lost", Event{Kind: EventLost, Err: errLost})
	if how.intent == toRelease {
		return givenUp(how.cause)
	}
	return errors.Join(refusal, &taskapi.StateError{Topic: b.topic, Sequences: sequences(b.tasks), Err: fmt.Errorf("%w: %w", errLost, taskapi.ErrNotActive)})
}

// lose finishes b whose settlement could not be written at all: its tasks,
// Active under this owner, are given back once the database answers again.
func (s *batchSettler[Tx]) lose(b *Batch, live []taskapi.Task, err error) error {
	s.m.giveBackLater(live)
	err = fmt.Errorf("%w (the tasks are given back as Ready once the database answers again)", err)
	s.finish(b, "released", Event{Kind: EventFailed, Err: err})
	return err
}

// abandon gives up the batch without a write: its tasks stay Active under
// the owner that polled them, for expiry, or for the same owner to give
// back once it recovers.
func (s *batchSettler[Tx]) abandon(b *Batch, live []taskapi.Task, cause error) error {
	b.cancel(cause)
	s.m.mu.Lock()
	s.m.abandoned = append(s.m.abandoned, live...)
	s.m.mu.Unlock()
	s.finish(b, "abandoned: "+cause.Error(), Event{Kind: EventAbandoned, Tasks: live, Err: cause})
	return fmt.Errorf("taskproc: batch of %q given up without a write: %w", b.topic, cause)
}

// finish marks b settled, gives its slot back and tells of it.
func (s *batchSettler[Tx]) finish(b *Batch, how string, e Event) {
	whole := b.finish(how)
	if whole != nil {
		s.slot()
	}
	e.Topic, e.Duration = b.topic, time.Since(b.polled)
	s.m.stats.settled(e)
	s.m.s.notify(e)
	// Last: a Stop that waits for the batches in flight returns after it.
	if whole != nil {
		s.m.update(func() { delete(s.r.batches, whole) })
	}
}

// runCompletion calls a completion function, turning a panic into an error.
func runCompletion[Tx any](ctx context.Context, tx Tx, completion any) (d Decisions, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	switch fn := completion.(type) {
	case func(context.Context) (Decisions, error):
		return fn(ctx)
	case func(context.Context, Tx) (Decisions, error):
		return fn(ctx, tx)
	}
	return nil, fmt.Errorf("completion of type %T: %w", completion, taskapi.ErrInvalidArgument)
}

// completionsOf pairs each of tasks with its decision from d, Failure for
// a task without one. A decision for a task that is not in all, the batch,
// is an error that names it; one for a task of all that is not in tasks
// (another owner's now) is left out.
func completionsOf(all, tasks []taskapi.Task, d Decisions) ([]taskapi.Completion, error) {
	inBatch := make(map[taskapi.Task]bool, len(all))
	for _, task := range all {
		inBatch[task] = true
	}
	var unknown []int64
	for task := range d {
		if !inBatch[task] {
			unknown = append(unknown, task.Sequence)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("decisions for tasks that are not in the batch: %s", joinSequences(unknown))
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		decision, ok := d[task]
		if !ok {
			decision = taskapi.Decision{Result: taskapi.Failure, Output: noDecision}
		}
		completions[i] = taskapi.Completion{Task: task, Decision: decision}
	}
	return completions, nil
}

// decisionsOf returns the decisions of completions.
func decisionsOf(completions []taskapi.Completion) Decisions {
	d := make(Decisions, len(completions))
	for _, c := range completions {
		d[c.Task] = c.Decision
	}
	return d
}

// failures returns a Failure with cause's text for each of tasks. The text
// is made valid for an output (UTF-8 without NUL bytes), so that the
// failure of a batch is never refused for its own message.
func failures(tasks []taskapi.Task, cause error) []taskapi.Completion {
	output := strings.ReplaceAll(strings.ToValidUTF8(cause.Error(), "\uFFFD"), "\x00", "\uFFFD")
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}}
	}
	return completions
}

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
