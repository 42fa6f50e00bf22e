package taskproc

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// How a settlement ends: written, lost to another owner, given back
// later, or abandoned; and the end of the batch it settles.

// written finishes b once how was written for live.
func (s *batchSettler[Tx]) written(b *Batch, how settlement, live []taskapi.Task, o outcome, refusal error) error {
	switch how.intent {
	case toComplete:
		if o.later {
			// The next due time may be theirs; a loop that waits (the
			// handler handed its decisions over, see Sequential) wakes.
			s.m.Resume()
		}
		s.finish(b, "completed", Event{Kind: EventCompleted, Tasks: live, Decisions: o.decided})
		s.m.resume(b.after)
		return refusal
	case toFail:
		s.finish(b, "failed", Event{Kind: EventFailed, Tasks: live, Err: how.cause})
		return refusal
	}
	s.finish(b, "released", Event{Kind: EventReleased, Tasks: live, Err: how.cause})
	s.m.signal() // the tasks are Ready again: a loop that waits polls them
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
		whole.crew.unreserve(whole) // a batch given up before its handler took it
	}
	e.Topic, e.Duration = b.topic, time.Since(b.polled)
	s.m.stats.settled(e)
	s.m.s.notify(e)
	// Last: a Stop that waits for the batches in flight returns after it.
	if whole != nil {
		s.m.update(func() { delete(s.r.batches, whole) })
	}
	if b.root().crew != nil {
		// The loop of a per-task handler polled beside the batch, maybe
		// before what this settles made tasks pollable (a retry due soon,
		// the next task of an identifier under SingularByIdentifier): it
		// polls again rather than wait its pause (see Manager.signal).
		s.m.signal()
	}
}
