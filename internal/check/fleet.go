package check

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// MinTerm is the shortest term a topic's leader may ask for: a lease that
// ends within a round trip could not be used, and the databases count time
// in microseconds.
const MinTerm = time.Millisecond

// Activation checks the arguments of SetActivation.
func Activation(topic string, activation taskapi.Activation) error {
	if err := Topic(topic); err != nil {
		return err
	}
	return Enum(activation)
}

// Lease checks a topic and the length of a term asked for (Lead, Renew): at
// least MinTerm.
func Lease(topic string, ttl time.Duration) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if ttl < MinTerm {
		return fmt.Errorf("term of %v is shorter than %v: %w", ttl, MinTerm, taskapi.ErrInvalidArgument)
	}
	return nil
}

// Renew checks the arguments of Renew by the repository of owner and
// reports whether the term can be renewed: only its owner's can.
func Renew(owner string, term taskapi.Term, ttl time.Duration) (bool, error) {
	return ran(term.Owner == owner, Lease(term.Topic, ttl))
}

// Concede checks the arguments of Concede by the repository of owner and
// reports whether the term can be conceded: only its owner's can.
func Concede(owner string, term taskapi.Term) (bool, error) {
	return ran(term.Owner == owner, Topic(term.Topic))
}

// Hold checks the arguments of Hold by the repository of owner: a term of
// a valid topic, with a Number of 1 or more, led by owner. Unlike Renew and
// Concede, which do nothing with a term of another owner, Hold could only
// report it false, which its caller would take for a term lost.
func Hold(owner string, term taskapi.Term) error {
	err := Topic(term.Topic)
	if err == nil {
		err = termNumber(term)
	}
	if err == nil {
		err = ownTerm(owner, term)
	}
	return err
}

// termNumber checks the Number of a term given to a call: 1 or more, as
// every term has.
func termNumber(term taskapi.Term) error {
	if term.Number < 1 {
		return fmt.Errorf("term number %d is below 1: %w", term.Number, taskapi.ErrInvalidArgument)
	}
	return nil
}

// ownTerm checks that term, given to a call of the repository of owner, is
// led by owner.
func ownTerm(owner string, term taskapi.Term) error {
	if term.Owner != owner {
		return fmt.Errorf("term %d of %q is led by %q, not by this repository's owner %q: %w",
			term.Number, Short(term.Topic), Short(term.Owner), Short(owner), taskapi.ErrInvalidArgument)
	}
	return nil
}

// Capacity checks a topic and a capacity to set: each bound 0 (none) or
// more.
func Capacity(topic string, capacity taskapi.Capacity) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if capacity.Ready < 0 {
		return fmt.Errorf("capacity: Ready %d is negative: %w", capacity.Ready, taskapi.ErrInvalidArgument)
	}
	if capacity.PerIdentifier < 0 {
		return fmt.Errorf("capacity: PerIdentifier %d is negative: %w", capacity.PerIdentifier, taskapi.ErrInvalidArgument)
	}
	return nil
}

// Limits checks a topic and the limits to set: each 0 (none) or more.
func Limits(topic string, limits taskapi.Limits) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if limits.Active < 0 || limits.PerIdentifier < 0 {
		return fmt.Errorf("limits %+v: a limit is negative: %w", limits, taskapi.ErrInvalidArgument)
	}
	return nil
}

// Bound checks the bound of taskapi.Bounder's Bound: a millisecond or more,
// the least that the servers' timeouts count.
func Bound(d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("a bound of %v is below a millisecond: %w", d, taskapi.ErrInvalidArgument)
	}
	return nil
}
