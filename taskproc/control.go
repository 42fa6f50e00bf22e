package taskproc

import (
	"context"
	"sync"
	"time"
)

// control runs what a Client does besides its Managers: the keeper, the
// Notifier and the reconciliation of activations, until stop.
type control struct {
	s         settings
	wake      func(topics ...string)                           // wakes the Managers of topics
	touch     func(topics []string)                            // has them read their next due time
	recheck   func()                                           // has every Manager look for tasks no batch holds
	reconcile func(ctx context.Context, topics []string) error // reads activations (all for none)
	stop      chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	pending   map[string]bool // topics whose activation changed; "" stands for all
	signal    chan struct{}
}

// startControl starts the keeper, the Notifier and the reconciliation.
func (c *Client[Tx]) startControl(ctx context.Context) *control {
	k := &control{s: c.s, wake: c.wake, touch: c.touchDue, recheck: c.recheck, reconcile: c.reconcile,
		stop: make(chan struct{}), pending: map[string]bool{}, signal: make(chan struct{}, 1)}
	if c.s.heartbeat > 0 {
		k.wg.Go(func() { c.keeper.run(ctx, k.stop) })
	}
	k.wg.Go(func() { k.reconciling(ctx) })
	if c.s.notifier != nil {
		k.wg.Go(func() { k.listen(ctx) })
	}
	return k
}

// halt stops what startControl started and waits for it.
func (k *control) halt() {
	close(k.stop)
	k.wg.Wait()
}

// listen runs the Notifier until stop.
func (k *control) listen(ctx context.Context) {
	ctx, cancel := untilClosed(ctx, k.stop)
	defer cancel()
	w := newWaker(k.wake, k.s.window)
	defer w.stop()
	// A lost connection of the Notifier is the one sign of a failover that
	// does not depend on the loops: a poll need not fail (pgx's pool
	// replaces a dead connection before it hands it out), and an
	// asynchronous standby may lack completions the old primary
	// confirmed, their tasks Active again under this owner.
	lost := func(err error) {
		k.recheck()
		k.s.notify(Event{Kind: EventNotifierLost, Err: err})
	}
	// A push of deferred tasks has the Managers read their next due time
	// at once, before the wake-up, which may come at the end of a window.
	deferred := func(topics []string) { k.touch(topics); w.wake(topics) }
	if err := k.s.notifier.Listen(ctx, w.wake, deferred, k.activated, lost); err != nil && ctx.Err() == nil {
		lost(err)
	}
}

// untilClosed returns a context that ends with ctx or when stop closes.
func untilClosed(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// activated asks for the activations of topics (all for none) to be read.
func (k *control) activated(topics []string) {
	k.mu.Lock()
	if len(topics) == 0 {
		k.pending[""] = true
	}
	for _, topic := range topics {
		k.pending[topic] = true
	}
	k.mu.Unlock()
	select {
	case k.signal <- struct{}{}:
	default:
	}
}

// reconciling reads the activations every reconcile interval, and at once
// when a notification asks for it. A round under way when stop closes is
// cut short, so that a Stop never waits for one, even one that waits for
// a connection of a starved pool.
func (k *control) reconciling(ctx context.Context) {
	ctx, cancel := untilClosed(ctx, k.stop)
	defer cancel()
	ticker := time.NewTicker(k.s.reconcile)
	defer ticker.Stop()
	for {
		var topics []string
		select {
		case <-k.stop:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-k.signal:
			topics = k.take()
			if topics == nil {
				continue
			}
		}
		if err := k.reconcile(ctx, topics); err != nil {
			k.s.notify(Event{Kind: EventReconcileFailed, Err: err})
		}
	}
}

// take returns the topics asked for: nil for none, empty for all.
func (k *control) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) == 0 {
		return nil
	}
	all := k.pending[""]
	topics := make([]string, 0, len(k.pending))
	for topic := range k.pending {
		topics = append(topics, topic)
	}
	clear(k.pending)
	if all {
		return []string{}
	}
	return topics
}
