package taskapi

import (
	"context"
	"errors"
	"fmt"
)

// ErrOverCapacity reports a push that would leave more Ready tasks in a
// topic than its capacity allows. The error is a *CapacityError that names
// the topic, its capacity and the count.
var ErrOverCapacity = errors.New("over capacity")

// CapacityError is the error of a push that a topic's capacity refused: with
// its tasks, the topic would hold Count Ready tasks (deferred ones
// included), more than Capacity. The push changed nothing.
type CapacityError struct {
	Topic    string
	Capacity int64
	Count    int64
}

// Error names the topic, the count and the capacity.
func (e *CapacityError) Error() string {
	return fmt.Sprintf("topic %q would hold %d Ready tasks, over its capacity of %d: %v",
		e.Topic, e.Count, e.Capacity, ErrOverCapacity)
}

// Unwrap returns ErrOverCapacity.
func (e *CapacityError) Unwrap() error { return ErrOverCapacity }

// Capacitor stores the capacity of topics: the most Ready tasks (deferred
// ones included) that a push may leave in a topic. A topic has none until
// one is set. Every new task stored in a topic with a capacity is admitted
// against it, those of a push and those of a revival that recreates tasks:
// a call whose tasks would make the topic exceed it fails with a
// *CapacityError and changes nothing, and concurrent calls never take a
// topic past it together. Tasks that come back to Ready in place (a
// release, a revival in place, a junction) are never refused; they count
// against later pushes.
type Capacitor[Tx any] interface {
	// SetCapacity sets the capacity of topic, at least 1; 0 removes it.
	// ErrUnknownTopic when topic is not registered; ErrInvalidArgument for
	// a bad topic name or a negative capacity. A topic that already holds
	// more Ready tasks keeps them, and refuses pushes until it drains
	// below its capacity. Destroying the topic forgets its capacity.
	SetCapacity(ctx context.Context, tx Tx, topic string, capacity int64) error
	// Capacities returns the capacity of every registered topic that has
	// one.
	Capacities(ctx context.Context, tx Tx) (map[string]int64, error)
}
