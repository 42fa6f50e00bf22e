package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// activate applies a topic's activation: Running claims, Paused and
// Draining claim nothing while the batches in flight go on.
func (m *Manager[Tx]) activate(a taskapi.Activation) {
	if taskapi.Activation(m.activation.Swap(int32(a))) == a {
		return
	}
	m.hold(holdPaused, a != taskapi.Running)
	m.s.notify(Event{Kind: EventActivated, Topic: m.topic, Activation: a})
}

// Activation returns the topic's activation as the Manager applies it.
func (m *Manager[Tx]) Activation() taskapi.Activation {
	return taskapi.Activation(m.activation.Load())
}

// Drained reports whether the topic is Draining and nothing of it is in
// flight any more: no batch unsettled, and no loop between its last check
// of the activation and the registration of what it polled (a batch
// polled meanwhile is given back unrun, and counts until it is).
func (m *Manager[Tx]) Drained() bool {
	return m.Activation() == taskapi.Draining && m.claiming.Load() == 0 && m.Stats().InFlight == 0
}

// activator returns the Client's repository as a taskapi.Activator, or
// false when it stores no activations.
func (c *Client[Tx]) activator() (taskapi.Activator[Tx], bool) {
	a, ok := any(c.keeper.owner()).(taskapi.Activator[Tx])
	return a, ok
}

// SetActivation stores the activation of topic for every process (through
// the repository, which must be a taskapi.Activator) and applies it here at
// once; the other processes follow on a notification (PostgreSQL, with a
// Notifier) or at their next reconciliation (WithReconcile).
func (c *Client[Tx]) SetActivation(ctx context.Context, topic string, a taskapi.Activation) error {
	activator, ok := c.activator()
	if !ok {
		return fmt.Errorf("taskproc: set the activation of %q: the repository stores none: %w", topic, taskapi.ErrInvalidArgument)
	}
	err := c.transact(ctx, func(tx Tx) error { return activator.SetActivation(ctx, tx, topic, a) })
	if err != nil {
		return err
	}
	if m := c.Manager(topic); m != nil {
		m.activate(a)
	}
	return nil
}

// reconcile reads the stored activations and applies them to the Managers
// of topics, or to every Manager for none (a topic with none runs), and
// ends the work on their tasks in flight that were cancelled.
func (c *Client[Tx]) reconcile(ctx context.Context, topics []string) error {
	c.mu.Lock()
	managers := maps.Clone(c.managers)
	c.mu.Unlock()
	return errors.Join(c.apply(ctx, topics, managers), c.cancellations(ctx, topics, managers))
}

// apply reads the stored activations and applies them to managers of
// topics (all for none).
func (c *Client[Tx]) apply(ctx context.Context, topics []string, managers map[string]*Manager[Tx]) error {
	activator, ok := c.activator()
	if !ok {
		return nil
	}
	var stored map[string]taskapi.Activation
	err := retryConflicts(ctx, func() error {
		return c.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
			stored, err = activator.Activations(ctx, tx)
			return err
		})
	})
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		topics = slices.Collect(maps.Keys(managers))
	}
	for _, topic := range topics {
		if m := managers[topic]; m != nil {
			m.activate(stored[topic]) // absent: Running, the zero Activation
		}
	}
	return nil
}
