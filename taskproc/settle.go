package taskproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
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
//   - Each run of a completion function whose transaction did not commit
//     counts as an attempt of the retry policy (WithRetry): once its
//     MaxAttempts ran so, the tasks end with Failure and the last error,
//     instead of running the function for ever (a transaction that a
//     server-side timeout ends each time, say). A database that does not
//     answer costs no run: the read-back waits for its answer.
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

// errLost is the error of a settlement that found every task of its batch
// taken by another owner (expired and revived meanwhile, say): it wrote
// nothing.
var errLost = errors.New("taskproc: every task of the batch was taken by another owner before the settlement was written; nothing was written")

// batchSettler settles the batches of one run of a Manager, with the
// repository that polled them.
type batchSettler[Tx any] struct {
	m    *Manager[Tx]
	r    *managerRun
	repo Repository[Tx]
	slot func()
}

func (s *batchSettler[Tx]) accepts(completion any) bool {
	_, ok := completion.(func(context.Context, Tx) (Decisions, error))
	return ok
}

func (s *batchSettler[Tx]) handedOver() *atomic.Int64 { return &s.m.handedOver }

// outcome is what one attempt of a settlement did.
type outcome struct {
	err       error
	ran       bool            // a completion function that takes the transaction ran: a rerun repeats what it did
	termLost  bool            // the term the batch was polled under is over in the database: nothing was written
	wrote     bool            // the attempt asked to commit all it had to write, or sent it as one statement (alone): only then may it have committed
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
	runs := 0         // runs of a completion function whose transaction did not commit
	for {
		if cause := b.revoked(); cause != nil && how.intent != toAbandon && (how.intent != toRelease || errors.Is(cause, ErrFenced)) {
			how = giveUp(cause) // a fenced owner writes nothing, not even a release
		}
		if how.intent == toAbandon {
			return s.abandon(b, live, how.cause)
		}
		if live = b.withoutCancelled(live); len(live) == 0 {
			return s.cancelledAll(b, how)
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
		case commitUnknown: // the database could not tell: given up
			return s.lose(b, live, v.err)
		case allTaken:
			s.m.cancelledAmong(b, v.stale)
			if len(b.withoutCancelled(live)) == 0 {
				return s.cancelledAll(b, how)
			}
			return s.lost(b, how, refusal)
		case partlyTaken:
			if s.m.cancelledAmong(b, v.stale) < len(v.stale) {
				s.m.s.logger.Warn("taskproc: tasks of a batch are not this owner's any more", "topic", b.topic, "sequences", v.stale)
			}
			live = v.held
		case termOver: // given up as a lost term is: the tasks go back to Ready
			s.m.loseTerm(v.o.err)
			b.root().revoke(ErrTermLost)
			how = giveUp(ErrTermLost)
		case notCommitted:
			live = v.held
			if v.o.ran {
				if runs++; runs >= s.m.s.retry.MaxAttempts {
					how = settlement{intent: toFail, cause: fruitless(runs, v.o.err)}
					continue
				}
			}
			wait := bo.next()
			s.retrying(b, live, v.o.err, wait)
			if b.revoked() == nil {
				_ = sleep(b.writes, wait)
			}
		}
	}
}

// fruitless is the failure of tasks whose completion function ran runs
// times without its transaction committing, the last time for err.
func fruitless(runs int, err error) error {
	return fmt.Errorf("taskproc: the completion function ran %d times (the retry policy's MaxAttempts) and its transaction never committed; the last time: %w", runs, err)
}

// A verdict is what an attempt of a settlement came to.
type verdict int

const (
	committed         verdict = iota // written
	notCommitted                     // a failure of the database, read back not to have committed: try again
	refusedCompletion                // the completion function or the database refused its decisions
	refusedSettlement                // the database refused a failure or a release
	partlyTaken                      // some tasks are another owner's now: try again without them
	allTaken                         // every task is another owner's now: nothing written
	commitUnknown                    // the database could not tell whether it committed
	termOver                         // the term the batch was polled under is over: the batch is given up
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
	case o.termLost:
		return tried{verdict: termOver, o: o}
	case o.refused && how.intent == toComplete:
		return tried{verdict: refusedCompletion, o: o}
	case o.refused:
		return tried{verdict: refusedSettlement, o: o}
	}
	if stale := staleOf(o.err); stale != nil {
		if held := without(live, stale); len(held) > 0 {
			return tried{verdict: partlyTaken, o: o, held: held, stale: stale}
		}
		return tried{verdict: allTaken, o: o, stale: stale}
	}
	done, held, err := s.settled(ctx, b, how, live, o)
	switch {
	case err != nil:
		return tried{verdict: commitUnknown, o: o, err: err}
	case done:
		return tried{verdict: committed, o: o}
	case len(held) == 0:
		return tried{verdict: allTaken, o: o}
	}
	return tried{verdict: notCommitted, o: o, held: held}
}

// decidedBy is how the tasks of b in live are settled when the completion
// function failed with err, rolled back, or the database refused what it
// decided: as a TaskFunc's error decides a task. A retry or a snooze is
// written as a completion that decides no task, an interrupted run and one
// that decided cancelled tasks are released, a ResultError gives its
// result, and any other error fails the tasks with its text.
func (b *Batch) decidedBy(err error, live []taskapi.Task) settlement {
	if errors.Is(err, errInterrupted) || errors.Is(err, errDecidedCancelled) {
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

// attempt writes how for live in one transaction: one statement that
// commits by itself where the write is one (see alone).
//
// The attempt is bounded (see bound.go): as a whole, or, when it runs a
// completion function that takes the transaction, but for the function's
// own run, or, in a group (see settle_group.go), but for its wait there.
func (s *batchSettler[Tx]) attempt(ctx context.Context, b *Batch, how settlement, live []taskapi.Task) outcome {
	alone := alone(b, how, live)
	if alone {
		ctx = taskapi.SingleStatement(ctx)
	}
	var o outcome
	if alone && how.intent == toComplete { // bounded as it is written (see settle_group.go)
		o.err = s.completeGrouped(ctx, b, how.completion, live, &o)
		o.wrote = o.err == nil || o.fnErr == nil && !o.refused && !errors.Is(o.err, errUnsent)
		return classified(ctx, o)
	}
	var w *watchdog
	if how.intent == toComplete && takesTx[Tx](how.completion) {
		leave, err := s.m.s.gate.enter(ctx) // a turn among the handlers' transactions (see pool.go)
		if err != nil {
			return outcome{err: fmt.Errorf("taskproc: wait for a connection the handlers may take: %w", err)}
		}
		defer leave()
		ctx, w = watch(ctx, s.m.own.d)
		defer w.stop()
	} else {
		var cancel context.CancelFunc
		ctx, cancel = s.m.own.bounded(ctx)
		defer cancel()
	}
	o.err = s.transactAttempt(ctx, b, how, live, alone, w, &o)
	return classified(ctx, o)
}

// classified is o with its refusal found: a run that its context
// interrupted is given back, whatever the transaction's end met, for it
// never committed.
func classified(ctx context.Context, o outcome) outcome {
	if o.err != nil && !o.refused {
		o.refused = errors.Is(o.fnErr, errInterrupted) || (refused(o.err, o.fnErr) && ctx.Err() == nil)
	}
	return o
}

// transactAttempt writes how for live in one transaction of the runtime's.
func (s *batchSettler[Tx]) transactAttempt(ctx context.Context, b *Batch, how settlement, live []taskapi.Task, alone bool,
	w *watchdog, o *outcome) error {
	return s.m.transact(ctx, func(tx Tx) error {
		*o = outcome{}
		var err error
		switch how.intent {
		case toComplete:
			err = s.complete(ctx, tx, b, how.completion, live, o, w)
		case toFail:
			o.evidence, o.completes = &live[0], []taskapi.State{taskapi.Failed}
			err = s.repo.Complete(ctx, tx, b.topic, failures(live, how.cause)...)
		default:
			err = s.repo.Release(ctx, tx, b.topic, live...)
		}
		if err == nil && how.intent != toRelease {
			err = s.hold(ctx, tx, b, o)
		}
		// A statement alone commits as it runs: once it may have been sent
		// (nothing refused it first), only the read-back can tell.
		o.wrote = err == nil || alone && o.fnErr == nil && !o.refused
		return err
	})
}

// takesTx reports whether completion is a completion function that takes
// the transaction (CompleteTx's), whose run is the caller's own work.
func takesTx[Tx any](completion any) bool {
	_, ok := completion.(func(context.Context, Tx) (Decisions, error))
	return ok
}

// alone reports whether an attempt of how writes one statement: a failure,
// or a completion whose function takes no transaction and none of whose
// tasks is marked to be retried or snoozed; never one of a batch polled
// under a term, whose transaction ends with the term's check (see hold). Such an attempt runs on a
// context marked taskapi.SingleStatement, so that a backend may send it
// without BEGIN and COMMIT, which at everyday rates are most of a
// completion's round trips. The settlement is as exactly-once as in a
// transaction: the statement writes all of its tasks or none, and a failure
// after it may have been sent is read back (see readBack) as a failed
// COMMIT is.
func alone(b *Batch, how settlement, live []taskapi.Task) bool {
	if b.term.Number > 0 {
		return false
	}
	switch how.intent {
	case toFail:
		return true
	case toComplete:
		_, plain := how.completion.(func(context.Context) (Decisions, error))
		return plain && len(b.markedTasks(live)) == 0
	}
	return false
}

// complete runs a completion function and records its decisions in tx.
// The watchdog w of a function that takes the transaction rests while the
// function runs, and the rest of the transaction is bounded on the server
// once it returned (taskapi.Bounder).
func (s *batchSettler[Tx]) complete(ctx context.Context, tx Tx, b *Batch, completion any, live []taskapi.Task, o *outcome, w *watchdog) error {
	b.after, b.live = nil, live
	if w != nil {
		w.pause()
		o.ran = true
	}
	d, err := runCompletion(ctx, tx, completion)
	if w != nil {
		w.resume()
	}
	if err != nil {
		o.fnErr = err
		return err
	}
	if w != nil {
		if err := decidedCancelled(b, live, d); err != nil {
			o.fnErr, o.refused = err, true // what it wrote for them must not commit
			return err
		}
		// The runtime's statements from here on are bounded as those of its
		// own transactions are, on the server and in their patience.
		ctx = taskapi.Bounded(ctx, w.d)
		if bounder, ok := s.repo.(taskapi.Bounder[Tx]); ok {
			if err := bounder.Bound(ctx, tx, w.d); err != nil {
				return err
			}
		}
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

// backoff returns the Manager's backoff between the attempts of a
// settlement: from retryBackoff, doubling, up to the pause.
func (m *Manager[Tx]) backoff() *backoff { return &backoff{bound: retryBackoff, limit: m.s.pause} }

// hold ends the transaction of a settlement of a batch polled under a term
// of leadership (WithLeadership): it commits only while the term is
// current in the database, checked last, in its own SQL, which holds off
// the next term until it has ended (taskapi.Leader's Hold). A term that
// is over refuses the settlement, whatever the local timers say: a leader
// stopped, slowed or misled by a clock never settles after another
// process leads. Nothing to do for a batch polled under no term.
func (s *batchSettler[Tx]) hold(ctx context.Context, tx Tx, b *Batch, o *outcome) error {
	if b.term.Number == 0 {
		return nil
	}
	leader, ok := s.repo.(taskapi.Leader[Tx])
	if !ok {
		return nil // the repository issued the term: it is a Leader
	}
	current, err := leader.Hold(ctx, tx, b.term)
	if err == nil && !current {
		o.termLost, err = true, fmt.Errorf("%w: term %d of %q is over in the database", ErrTermLost, b.term.Number, b.topic)
	}
	return err
}

// errUnsent is the error of a completion that left its group before the
// group's statement was sent: it wrote nothing.
var errUnsent = errors.New("taskproc: the completion left its group unsent")
