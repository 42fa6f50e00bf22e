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

// Capacity checks a topic and a capacity to set: 0 (none) or more.
func Capacity(topic string, capacity int64) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if capacity < 0 {
		return fmt.Errorf("capacity %d is negative: %w", capacity, taskapi.ErrInvalidArgument)
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
