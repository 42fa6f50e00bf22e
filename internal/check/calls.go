package check

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The arguments of whole calls, checked in one place so that every
// implementation rejects the same input with the same error.

// Poll checks the arguments of Poll of the repository of owner and
// resolves its options (see pollOptions): a Term must be of topic and
// owner.
func Poll(owner, topic string, opts []taskapi.PollOption) (Polling, error) {
	p, err := polling(topic, opts)
	if err == nil && p.Term != nil && p.Term.Owner != owner {
		err = fmt.Errorf("term %d of %q is led by %q, not by this repository's owner %q: %w",
			p.Term.Number, Short(topic), Short(p.Term.Owner), Short(owner), taskapi.ErrInvalidArgument)
	}
	if err != nil {
		return Polling{}, err
	}
	return p, nil
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

// Defer checks the arguments of Defer other than the tasks.
func Defer(topic string, until time.Time) error {
	if err := Topic(topic); err != nil {
		return err
	}
	return NotBefore(until)
}

// Revive checks the arguments of Revive.
func Revive(topic string, how taskapi.Revivification, state taskapi.State) error {
	if err := ReviveTasks(topic, how); err != nil {
		return err
	}
	return Revivable(state)
}

// ReviveTasks checks the arguments of ReviveTasks other than the tasks.
func ReviveTasks(topic string, how taskapi.Revivification) error {
	if err := Topic(topic); err != nil {
		return err
	}
	return Enum(how)
}

// ReassignAll checks the arguments of ReassignAll.
func ReassignAll(topic string, from taskapi.State, to taskapi.Result) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if err := Revivable(from); err != nil {
		return err
	}
	return Enum(to)
}

// Page checks the arguments of Page.
func Page(topic string, listing taskapi.Listing, direction taskapi.Direction) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if err := Filter(listing.States, listing.Reference, listing.Identifier); err != nil {
		return err
	}
	return Enum(direction)
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

// Find checks the arguments of Find: a topic, and at least one prefix,
// each of which must be a valid identifier or reference.
func Find(topic string, search taskapi.Search) error {
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
