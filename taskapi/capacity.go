package taskapi

import (
	"context"
	"errors"
	"fmt"
)

// ErrOverCapacity reports a push that would leave more Ready tasks in a
// topic, or of one identifier of a topic, than its capacity allows. The
// error is a *CapacityError that names the topic (and the identifier), the
// capacity and the count.
var ErrOverCapacity = errors.New("over capacity")

// Capacity bounds the Ready tasks (deferred ones included) a push may leave
// in a topic. Zero is no bound; the zero Capacity is none at all.
type Capacity struct {
	// Ready is the most Ready tasks of the topic; 0: no bound.
	Ready int64
	// PerIdentifier is the most Ready tasks of any one identifier of the
	// topic; 0: no bound. It keeps one identifier, such as a tenant whose
	// tasks carry its name, from filling the topic: a push of an
	// identifier at its bound is refused, those of the others are not.
	PerIdentifier int64
}

// CapacityError is the error of a push that a capacity refused: with its
// tasks, the topic would hold Count Ready tasks (deferred ones included),
// more than Capacity, its Capacity.Ready. When Identifier is set, the bound
// of that identifier refused it: the identifier would hold Count Ready
// tasks of the topic, more than Capacity, its Capacity.PerIdentifier. The
// push changed nothing.
type CapacityError struct {
	Topic      string
	Identifier string // empty when the topic's bound refused
	Capacity   int64
	Count      int64
}

// Error names the topic (and the identifier), the count and the capacity.
func (e *CapacityError) Error() string {
	if e.Identifier != "" {
		return fmt.Sprintf("identifier %q of topic %q would hold %d Ready tasks, over its capacity of %d: %v",
			e.Identifier, e.Topic, e.Count, e.Capacity, ErrOverCapacity)
	}
	return fmt.Sprintf("topic %q would hold %d Ready tasks, over its capacity of %d: %v",
		e.Topic, e.Count, e.Capacity, ErrOverCapacity)
}

// Unwrap returns ErrOverCapacity.
func (e *CapacityError) Unwrap() error { return ErrOverCapacity }

// Capacitor stores the capacity of topics: the most Ready tasks (deferred
// ones included) that a push may leave in a topic, and of any one
// identifier in it. A topic has none until one is set. Every new task
// stored in a topic with a capacity is admitted against it, those of a
// push and those of a revival that recreates tasks: a call whose tasks
// would make the topic, or one of their identifiers, exceed its bound fails
// with a *CapacityError and changes nothing, and concurrent calls never
// take a topic or an identifier past it together. Tasks that come back to
// Ready in place (a release, a revival in place, a junction) are never
// refused; they count against later pushes.
type Capacitor[Tx any] interface {
	// SetCapacity sets the capacity of topic; the zero Capacity removes
	// it. ErrUnknownTopic when topic is not registered;
	// ErrInvalidArgument for a bad topic name or a negative bound. A
	// topic (an identifier) that already holds more Ready tasks keeps
	// them, and refuses pushes (of that identifier) until it drains below
	// its bound. Destroying the topic forgets its capacity.
	SetCapacity(ctx context.Context, tx Tx, topic string, capacity Capacity) error
	// Capacities returns the capacity of every registered topic that has
	// one.
	Capacities(ctx context.Context, tx Tx) (map[string]Capacity, error)
}
