package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A Client is the runtime of one process, for one owner: a Manager per
// topic that has a handler, started and stopped together, and its keeper.
// It is the value a consumer service makes once, at start-up.
//
// The keeper registers the owner at Start and sends its heartbeat every
// interval (WithHeartbeat). Every heartbeat, it expires the Active tasks of
// other owners silent for longer than the expiry (WithExpiry, on the
// database clock), revives them if asked (WithRevival), and now and then
// purges dead owners (WithOwnerPurge). Several processes doing so at once
// is the normal case. When no heartbeat of its own was confirmed within
// the expiry of the moment the last confirmed one was sent — the database
// was away, or the process was stopped and its next heartbeat came late —
// the Client fences itself: its Managers stop claiming and give up their
// batches and their terms of leadership without a write (their contexts
// end with ErrFenced, and nothing they settle reaches the database), since
// another process may have expired and revived their tasks meanwhile. Once
// the database answers, it goes on under a new owner (WithSuccessor), so
// that no claim of the fenced owner is ever completed by its successor.
type Client[Tx any] struct {
	repo     Repository[Tx]
	transact Transact[Tx]
	own      runner[Tx] // the runtime's own transactions, bounded (see bound.go)
	opts     []ClientOption
	s        settings
	keeper   *keeper[Tx]
	clock    *clockOffset // the database's clock as the keeper measures it, shared by the Managers
	gate     *connGate    // the turns of the handlers' transactions on the pool, shared by the Managers

	mu       sync.Mutex
	managers map[string]*Manager[Tx]
	running  *clientRun[Tx] // nil while stopped
}

// clientRun is one Start to Stop of a Client.
type clientRun[Tx any] struct {
	managers  []*Manager[Tx]
	control   *control // the keeper, the Notifier and the reconciliation
	halt      sync.Once
	stopAfter func() bool // unregisters the stop on the end of Start's context
}

// New returns a Client that polls as repo's owner and runs its transactions
// through transact. opts apply to every topic, before the topic's own.
func New[Tx any](repo Repository[Tx], transact Transact[Tx], opts ...ClientOption) (*Client[Tx], error) {
	s, err := apply(opts, nil)
	if err == nil && (repo == nil || transact == nil) {
		err = fmt.Errorf("a repository and a transaction function are required: %w", taskapi.ErrInvalidArgument)
	}
	if err != nil {
		return nil, fmt.Errorf("taskproc: new client: %w", err)
	}
	c := &Client[Tx]{repo: repo, transact: transact, own: runner[Tx]{transact, s.bound()}, opts: opts, s: s, managers: map[string]*Manager[Tx]{}, clock: &clockOffset{}, gate: &connGate{}}
	if c.keeper, err = newKeeper(repo, transact, c.managerList, s); err != nil {
		return nil, err
	}
	return c, nil
}

// Handle registers handler for topic, with options of the topic's own. It
// fails with ErrInvalidArgument for a topic that has a handler already or
// invalid options, and with ErrRunning once the Client runs.
func (c *Client[Tx]) Handle(topic string, handler Handler, opts ...TopicOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		return fmt.Errorf("taskproc: handle %q: %w", topic, ErrRunning)
	}
	if _, ok := c.managers[topic]; ok {
		return fmt.Errorf("taskproc: handle %q: the topic has a handler already: %w", topic, taskapi.ErrInvalidArgument)
	}
	s, err := apply(c.opts, opts)
	if err != nil {
		return fmt.Errorf("taskproc: handle %q: %w", topic, err)
	}
	s.wiring = wiring{resume: c.resumeLocal, alive: c.keeper.alive, managed: true, clock: c.clock, gate: c.gate}
	m, err := newManager(c.repo, c.transact, topic, handler, s)
	if err != nil {
		return err
	}
	c.managers[topic] = m
	return nil
}

// demands returns what the handlers of the Managers hold at once; under
// c.mu.
func (c *Client[Tx]) demands() []demand {
	var demands []demand
	for _, m := range c.managers {
		demands = append(demands, demandOf(m))
	}
	return demands
}

// managerList returns the Managers, in no order.
func (c *Client[Tx]) managerList() []*Manager[Tx] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.managers))
}

// Manager returns the Manager of topic, nil when topic has no handler.
func (c *Client[Tx]) Manager(topic string) *Manager[Tx] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.managers[topic]
}

// Topics lists the topics that have a handler, sorted.
func (c *Client[Tx]) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.managers))
}

// Start registers the owner, starts the heartbeat and every Manager, and
// returns once they run. When one fails to start, the others are stopped
// again and Start returns the error. ErrRunning if the Client runs already.
// When ctx ends, the Client stops as a Stop without a deadline does: every
// Manager stops polling and stops once its batches in flight are settled
// (see Manager.Start); call Stop, with a deadline, to bound that and to
// wait for it. The heartbeat, the keeper and the Notifier run until the
// last batch is settled or given back, whichever context ended first:
// another process never takes over work that still runs here.
func (c *Client[Tx]) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		return fmt.Errorf("taskproc: start: %w", ErrRunning)
	}
	if err := sizePool(ctx, c.transact, c.gate, c.demands()); err != nil {
		return fmt.Errorf("taskproc: start: %w", err)
	}
	if err := registered(ctx, c.transact, c.repo, slices.Collect(maps.Keys(c.managers))); err != nil {
		return fmt.Errorf("taskproc: start: %w", err)
	}
	if err := c.keeper.register(ctx); err != nil {
		return fmt.Errorf("taskproc: start: register owner %q: %w", c.keeper.owner().Owner(), err)
	}
	if err := c.apply(ctx, nil, c.managers); err != nil {
		c.keeper.stop()
		return fmt.Errorf("taskproc: start: read the activations: %w", err)
	}
	// The Managers stop on their own when ctx ends; what keeps their owner
	// alive must outlive them, so it runs on a context that does not end.
	var started []*Manager[Tx]
	for _, topic := range slices.Sorted(maps.Keys(c.managers)) {
		m := c.managers[topic]
		if err := m.Start(ctx); err != nil {
			err = errors.Join(err, stopAll(context.WithoutCancel(ctx), started))
			c.keeper.stop()
			return err
		}
		started = append(started, m)
	}
	cr := &clientRun[Tx]{managers: started, control: c.startControl(context.WithoutCancel(ctx))}
	cr.stopAfter = context.AfterFunc(ctx, func() { _ = c.stopRun(context.Background(), cr) })
	c.running = cr
	return nil
}

// Stop stops every Manager at once, as Manager.Stop does, then the keeper,
// the Notifier and the reconciliation, and returns their errors joined
// (ctx.Err() when ctx ended before every batch was settled). A Stop during
// another waits for the same end; the first context to end hurries both.
func (c *Client[Tx]) Stop(ctx context.Context) error {
	c.mu.Lock()
	cr := c.running
	c.mu.Unlock()
	if cr == nil {
		return nil
	}
	cr.stopAfter()
	return c.stopRun(ctx, cr)
}

// stopRun stops the Managers of cr, and once they have all stopped, the
// rest of it.
func (c *Client[Tx]) stopRun(ctx context.Context, cr *clientRun[Tx]) error {
	err := stopAll(ctx, cr.managers)
	cr.halt.Do(func() {
		cr.control.halt()
		c.mu.Lock()
		if c.running == cr {
			c.running = nil
		}
		c.mu.Unlock()
	})
	return err
}

// Resume wakes the Managers of topics, or every Manager when none are
// named, so that they poll at once.
func (c *Client[Tx]) Resume(topics ...string) {
	for _, m := range c.managersOf(topics) {
		m.Resume()
	}
}

// wake wakes the Managers of topics (every Manager for none) for new ready
// tasks: unlike Resume, it leaves their due times as they are.
func (c *Client[Tx]) wake(topics ...string) {
	for _, m := range c.managersOf(topics) {
		m.signal()
	}
}

// touchDue has the Managers of topics (every Manager for none) read when
// their next deferred task is due, at their next poll.
func (c *Client[Tx]) touchDue(topics []string) {
	for _, m := range c.managersOf(topics) {
		m.due.touch()
	}
}

// recheck has every Manager look, at its next tidy, for tasks Active under
// this owner that no batch holds, as after a failed poll: the database may
// have lost settlements it confirmed (see control.listen).
func (c *Client[Tx]) recheck() {
	for _, m := range c.managersOf(nil) {
		m.doubt()
	}
}

// managersOf returns the Managers of topics, every Manager for none.
func (c *Client[Tx]) managersOf(topics []string) []*Manager[Tx] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(topics) == 0 {
		return slices.Collect(maps.Values(c.managers))
	}
	var managers []*Manager[Tx]
	for _, topic := range topics {
		if m, ok := c.managers[topic]; ok {
			managers = append(managers, m)
		}
	}
	return managers
}

// resumeLocal wakes the managers of topics to which a completion pushed
// follow-up tasks; a topic without a local manager is left alone.
func (c *Client[Tx]) resumeLocal(topics ...string) {
	if len(topics) > 0 {
		c.Resume(topics...)
	}
}

// Owner returns the name of the owner the Client polls as now: after it
// fenced itself and recovered, its successor's.
func (c *Client[Tx]) Owner() string { return c.keeper.owner().Owner() }

// stopAll stops managers at once and joins their errors, ctx.Err() once.
func stopAll[Tx any](ctx context.Context, managers []*Manager[Tx]) error {
	errs := make([]error, len(managers))
	var wg sync.WaitGroup
	for i, m := range managers {
		wg.Go(func() { errs[i] = m.Stop(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		errs = slices.DeleteFunc(errs, func(err error) bool { return err == ctx.Err() }) //nolint:errorlint // the Managers' own ctx.Err(), as it is: added once below
		errs = append(errs, ctx.Err())
	}
	return joinErrors(errs)
}
