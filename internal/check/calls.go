package check

import (
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The arguments of whole calls, checked in one place so that every
// implementation rejects the same input with the same error.

// Poll checks Poll's topic and options and resolves the options.
func Poll(topic string, opts []taskapi.PollOption) (taskapi.Order, taskapi.Condition, error) {
	order, condition, err := PollOptions(opts)
	if err == nil {
		err = Topic(topic)
	}
	return order, condition, err
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
