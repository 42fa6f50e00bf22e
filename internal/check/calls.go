package check

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The preambles of the repository's methods, written once: each checks
// the arguments of a whole call, so that every backend rejects the same
// input with the same error, and reports whether the call has anything to
// do (run), so that every backend answers an empty call — no tasks, a size
// below one, an empty span — the same way, without a round trip. A call
// with an error has nothing to do: a backend's method starts
//
//	run, err := check.Push(topic, insertion, creations)
//	if !run {
//		return nil, wrapf(err, "push to %q", topic) // nil for nil
//	}
//
// and keeps only its SQL.

// ran pairs a verdict with whether the call, when valid, has work.
func ran(work bool, err error) (bool, error) { return err == nil && work, err }

// Poll checks the arguments of Poll of the repository of owner, resolves
// its options (see pollOptions) and reports whether size asks for a task:
// a Term must be of topic and owner.
func Poll(owner, topic string, size int, opts []taskapi.PollOption) (Polling, bool, error) {
	p, err := polling(topic, opts)
	if err == nil && p.Term != nil {
		err = ownTerm(owner, *p.Term)
	}
	if err != nil {
		return Polling{}, false, err
	}
	if p.Note != nil {
		*p.Note = taskapi.LimitNote{} // a note given again learns afresh
	}
	return p, size > 0, nil
}

// polling checks Poll's topic and options, a Term's topic among them.
func polling(topic string, opts []taskapi.PollOption) (Polling, error) {
	p, err := pollOptions(opts)
	if err == nil {
		err = Topic(topic)
	}
	if err == nil && p.Term != nil && p.Term.Topic != topic {
		err = fmt.Errorf("term %d of %q given to a poll of %q: %w",
			p.Term.Number, Short(p.Term.Topic), Short(topic), taskapi.ErrInvalidArgument)
	}
	return p, err
}

// Defer checks the arguments of Defer and reports whether it names tasks.
func Defer(topic string, until time.Time, tasks []taskapi.Task) (bool, error) {
	err := Topic(topic)
	if err == nil {
		err = NotBefore(until)
	}
	return ran(len(tasks) > 0, err)
}

// Release checks the arguments of Release and reports whether it names
// tasks.
func Release(topic string, tasks []taskapi.Task) (bool, error) {
	return ran(len(tasks) > 0, Topic(topic))
}

// Revive checks the arguments of Revive and reports whether the span and
// size can hold a task.
func Revive(topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) (bool, error) {
	_, err := ReviveTasks(topic, how, nil)
	if err == nil {
		err = Revivable(state)
	}
	return ran(size > 0 && !span.Empty(), err)
}

// ReviveTasks checks the arguments of ReviveTasks and reports whether it
// names tasks.
func ReviveTasks(topic string, how taskapi.Revivification, tasks []taskapi.Task) (bool, error) {
	err := Topic(topic)
	if err == nil {
		err = Enum(how)
	}
	return ran(len(tasks) > 0, err)
}

// ReassignAll checks the arguments of ReassignAll and reports whether it
// can change a task: not when span is empty or the result's state is from.
func ReassignAll(topic string, from taskapi.State, to taskapi.Result, span taskapi.Range) (bool, error) {
	err := Topic(topic)
	if err == nil {
		err = Revivable(from)
	}
	if err == nil {
		err = Enum(to)
	}
	return ran(from != to.State() && !span.Empty(), err)
}

// Purge checks the arguments of Purge, returns the states it deletes
// (DefaultPurged when none are given) and reports whether span can hold a
// task.
func Purge(topic string, span taskapi.Range, states []taskapi.State) ([]taskapi.State, bool, error) {
	err := Topic(topic)
	if err == nil {
		err = States(states, nil)
	}
	if len(states) == 0 {
		states = DefaultPurged
	}
	run, err := ran(!span.Empty(), err)
	return states, run, err
}

// DefaultPurged are the states Purge deletes when given none: Failed to
// Cancelled, every state of a task that is done.
var DefaultPurged = []taskapi.State{
	taskapi.Failed, taskapi.Suspended, taskapi.Filtered,
	taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant, taskapi.Cancelled,
}

// Page checks the arguments of Page and reports whether the page can hold
// a task: not for a size below one, nor for a cursor below Inception or at
// the end it walks away from.
func Page(topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) (bool, error) {
	run, err := PageAt(topic, listing, size, direction)
	return run && cursor >= taskapi.Inception &&
		(direction != taskapi.Forward || cursor != taskapi.MaxSequence) &&
		(direction != taskapi.Backward || cursor != taskapi.Inception), err
}

// PageAt checks the arguments of PageAt and reports whether size asks for
// a task.
func PageAt(topic string, listing taskapi.Listing, size int, direction taskapi.Direction) (bool, error) {
	err := Topic(topic)
	if err == nil {
		err = Filter(listing.States, listing.Reference, listing.Identifier)
	}
	if err == nil {
		err = Enum(direction)
	}
	return ran(size > 0, err)
}

// Count checks the arguments of Count; an empty topic filters nothing.
func Count(snapshot taskapi.Snapshot, filter taskapi.Counting) error {
	if err := Enum(snapshot); err != nil {
		return err
	}
	if filter.Topic != "" {
		if err := Topic(filter.Topic); err != nil {
			return err
		}
	}
	return Filter(filter.States, filter.Reference, filter.Identifier)
}

// Find checks the arguments of Find — a topic, and at least one prefix,
// each of which must be a valid identifier or reference — and reports
// whether the size and cursor can hold a task.
func Find(topic string, search taskapi.Search, cursor int64, size int) (bool, error) {
	return ran(size > 0 && cursor > taskapi.Inception, finding(topic, search))
}

// finding checks Find's topic and prefixes.
func finding(topic string, search taskapi.Search) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if search.Identifier == "" && search.Reference == "" {
		return fmt.Errorf("a search needs a prefix of the identifier or of the reference: %w", taskapi.ErrInvalidArgument)
	}
	if err := Reference(search.Reference); err != nil {
		return err
	}
	if search.Identifier == "" {
		return nil
	}
	return Identifier(search.Identifier)
}

// Cancel checks the arguments of Cancel and reports whether there is a
// task to cancel.
func Cancel(topic, reason string, sequences []int64) (bool, error) {
	err := Topic(topic)
	if err == nil {
		err = Text("reason", reason)
	}
	return ran(len(sequences) > 0, err)
}

// CancelIdentifier checks the arguments of CancelIdentifier.
func CancelIdentifier(topic, identifier, reason string) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if err := Identifier(identifier); err != nil {
		return err
	}
	return Text("reason", reason)
}
