package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// ErrRunning refuses to start a Manager or Client that runs already.
var ErrRunning = errors.New("taskproc: already running")

// errStopped is the cause with which a Stop that ran out of time cancels
// the contexts of the batches in flight.
var errStopped = errors.New("taskproc: stopped before the batch was settled")

// A Starter is a Handler with goroutines of its own, such as Buffered's
// workers: a Manager starts it before its loop, and stops it once the loop
// stopped polling, before it waits for the batches in flight.
type Starter interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// A Manager runs the poll loop of one topic: it acquires a limiter slot,
// polls a batch in a transaction of its own, hands it to its handler and
// polls again at once; after a poll that found nothing it waits its pause,
// or until Resume wakes it; after a failed poll it backs off. A Client runs
// one Manager per topic; a Manager can also run alone.
type Manager[Tx any] struct {
	topic      string
	handler    Handler
	transact   Transact[Tx]
	own        runner[Tx] // the runtime's own transactions, bounded (see bound.go)
	s          settings
	repo       atomic.Pointer[repoBox[Tx]]
	holds      atomic.Int32 // why the loop claims nothing: a bit per reason (see hold)
	activation atomic.Int32 // the topic's taskapi.Activation
	stats      counters
	due        *dueWatch
	clock      *clockOffset                   // the Client's, or the Manager's own
	lead       atomic.Pointer[leadership[Tx]] // the election, with WithLeadership
	schedules  []schedule
	group      *settleGroup // the grouped completions (see settle_group.go)
	handedOver atomic.Int64 // the tasks of the settlements handed over and not written (see handOver)
	unsure     atomic.Bool  // a poll failed and may have claimed tasks all the same (see tidy)
	claiming   atomic.Int32 // loops between their last check of the holds and the registration of their batch
	// polling is read by polls until their batch is registered, and written
	// by tidy and by the settlements that may make tasks Ready again (see
	// settle.go).
	polling sync.RWMutex

	mu        sync.Mutex
	run       *managerRun // the current run; nil while stopped
	changed   chan struct{}
	abandoned []taskapi.Task // tasks given up when the owner fenced itself, or whose settlement could not be written: given back as Ready later
}

// repoBox holds a Repository for atomic.Pointer.
type repoBox[Tx any] struct{ repo Repository[Tx] }

// managerRun is one Start to Stop of a Manager.
type managerRun struct {
	ctx        context.Context    // values of Start's context; ends when Stop gives up
	cancel     context.CancelFunc // hard stop: a poll in progress gives up
	loopCtx    context.Context    // ends when Stop begins: no more waiting or polling
	loopCancel context.CancelFunc
	stopAfter  func() bool // unregisters the stop on the end of Start's context
	// hurry ends when a Stop's context ends: the batches still in flight
	// are interrupted.
	hurry   context.Context
	hurryUp context.CancelFunc
	wakes   []chan struct{} // one per loop, each holding one wake-up
	surge   chan struct{}   // wakes the surge loop (see surges); nil without one
	elected <-chan struct{} // closed when the leadership has conceded; nil without one
	// unelect is closed once the run's batches are settled: the leadership
	// concedes then, not before, so that no other process leads while a
	// batch of this one's term still runs.
	unelect chan struct{}
	// Under the Manager's mu:
	loops       int // loop goroutines that have not returned, but the surge loop
	surges      int // the surge loop, until it returned
	schedules   int // schedule goroutines that have not returned
	inHandler   int // loop goroutines inside the handler
	handlers    int // goroutines of a per-task handler off the loops, and its crews' workers (see crew.go)
	batches     map[*Batch]struct{}
	stopping    bool
	interrupted bool          // a Stop's context ended before every batch was settled
	stopped     chan struct{} // closed when the run has stopped
	stopErr     error
}

// NewManager returns a Manager of topic that polls as repo's owner and hands
// the batches to handler.
func NewManager[Tx any](repo Repository[Tx], transact Transact[Tx], topic string, handler Handler, opts ...TopicOption) (*Manager[Tx], error) {
	s, err := apply(nil, opts)
	if err != nil {
		return nil, fmt.Errorf("taskproc: manager of %q: %w", check.Short(topic), err)
	}
	return newManager(repo, transact, topic, handler, s)
}

// newManager returns a Manager with the settings s.
func newManager[Tx any](repo Repository[Tx], transact Transact[Tx], topic string, handler Handler, s settings) (*Manager[Tx], error) {
	err := check.Topic(topic)
	if err == nil && (repo == nil || transact == nil || handler == nil) {
		err = fmt.Errorf("a repository, a transaction function and a handler are required: %w", taskapi.ErrInvalidArgument)
	}
	var schedules []schedule
	if err == nil {
		schedules, err = schedulesOf(s.schedules)
	}
	if err != nil {
		return nil, fmt.Errorf("taskproc: manager of %q: %w", check.Short(topic), err)
	}
	m := &Manager[Tx]{topic: topic, handler: handler, transact: transact, own: runner[Tx]{transact, s.bound()}, s: s, changed: make(chan struct{}),
		due: newDueWatch(s), schedules: schedules, clock: s.clock, group: newSettleGroup(s.settle)}
	if m.clock == nil {
		m.clock = &clockOffset{}
	}
	if m.s.gate == nil {
		m.s.gate = &connGate{}
	}
	m.repo.Store(&repoBox[Tx]{repo})
	return m, nil
}

// Topic returns the Manager's topic.
func (m *Manager[Tx]) Topic() string { return m.topic }

// SetRepository makes the Manager poll as another repository's owner from
// its next poll on, for a process that continues under a new owner name.
// Batches polled before are settled with the repository that polled them.
func (m *Manager[Tx]) SetRepository(repo Repository[Tx]) { m.repo.Store(&repoBox[Tx]{repo}) }

// SetClaiming turns polling off (false: the loop claims no task and waits,
// batches in flight go on) or on again (true, the default), waking the loop.
// The runtime holds polling too, for reasons of its own (a fenced owner, a
// paused topic); the loop claims only when nothing holds it.
func (m *Manager[Tx]) SetClaiming(on bool) { m.hold(holdUser, !on) }

// Start starts the loop and returns once it runs; ErrRunning if it runs
// already. The batches' contexts carry ctx's values. When ctx ends, the
// Manager stops as a Stop without a deadline does: it stops polling and
// waits for the batches in flight; a Stop with a deadline bounds that wait.
func (m *Manager[Tx]) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run != nil {
		return fmt.Errorf("taskproc: start the manager of %q: %w", m.topic, ErrRunning)
	}
	if !m.s.managed { // a Client checks its pool and topics itself, all at once
		err := sizePool(ctx, m.transact, m.s.gate, []demand{demandOf(m)})
		if err == nil {
			err = registered(ctx, m.transact, m.repository(), []string{m.topic})
		}
		if err != nil {
			return fmt.Errorf("taskproc: start the manager of %q: %w", m.topic, err)
		}
	}
	if st, ok := m.handler.(Starter); ok {
		if err := st.Start(ctx); err != nil {
			return fmt.Errorf("taskproc: start the handler of %q: %w", m.topic, err)
		}
	}
	r := &managerRun{batches: map[*Batch]struct{}{}, stopped: make(chan struct{}), loops: m.s.pollers, unelect: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.loopCtx, r.loopCancel = context.WithCancel(r.ctx)
	r.hurry, r.hurryUp = context.WithCancel(context.Background())
	if m.s.leaderTTL > 0 {
		elected, err := m.startLeadership(r)
		if err != nil {
			r.cancel()
			return err
		}
		r.elected = elected
	}
	r.stopAfter = context.AfterFunc(ctx, func() { _ = m.Stop(context.Background()) })
	m.run = r
	for range m.s.pollers {
		wake := make(chan struct{}, 1)
		r.wakes = append(r.wakes, wake)
		go m.loop(r, wake, m.crewFor(r), false)
	}
	if m.surges() {
		r.surge, r.surges = make(chan struct{}, 1), 1
		go m.loop(r, r.surge, nil, true)
	}
	r.schedules = len(m.schedules)
	for _, s := range m.schedules {
		go m.runSchedule(r, s)
	}
	return nil
}

// surges reports whether m runs a surge loop beside its poll loops: one
// that polls only while a backlog lasts and the handler's workers wait for
// batches, that is while one loop's polls are what holds the work back:
// woken when a loop's poll comes back full with no batch left waiting in
// the buffer, it polls until its own poll is not full or a batch waits.
// So two polls are in flight during a burn-down, and one when the topic
// keeps up or the workers are the bottleneck. Only a Buffered handler
// gets one: it takes batches from any goroutine and runs them out of
// order anyway, while a handler called on the loop may count on one call
// at a time (WithPollers lets it have more).
func (m *Manager[Tx]) surges() bool {
	_, ok := m.handler.(*BufferedHandler)
	return ok
}

// starved reports whether the handler's workers have taken every batch
// handed over: a Buffered handler's buffer is empty.
func (m *Manager[Tx]) starved() bool {
	h, ok := m.handler.(*BufferedHandler)
	return ok && h.Depth() == 0
}

// crewFor returns a crew of r for a loop of a per-task handler, nil for
// any other handler: the loop then hands its batches over on itself.
func (m *Manager[Tx]) crewFor(r *managerRun) *crew {
	h, ok := m.handler.(perTaskHandler)
	if !ok {
		return nil
	}
	return newCrew(h.workers(), m.s.size, func(delta int) { m.update(func() { r.handlers += delta }) })
}

// Active reports whether the loop runs: false once stopped, and false when
// it died on its own (an EventFatal says why).
func (m *Manager[Tx]) Active() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run != nil && m.run.loops > 0 && !m.run.stopping
}

// Resume wakes the loop if it waits, so that it polls at once, and has it
// read when its next deferred task is due; a wake-up while the loop is
// busy is kept, and its next wait returns at once. It reports whether the
// loop runs.
func (m *Manager[Tx]) Resume() bool {
	m.due.touch()
	return m.signal()
}

// signal wakes the loops if they wait, and reports whether the Manager
// runs; Resume also has them read their next due time.
func (m *Manager[Tx]) signal() bool {
	m.mu.Lock()
	r := m.run
	running := r != nil && r.loops > 0 && !r.stopping
	m.mu.Unlock()
	if running {
		for _, wake := range r.wakes {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
	return running
}

// Stop stops the Manager in stages. It stops polling at once, stops the
// handler if it is a Starter, and waits for the batches in flight to be
// settled; under leadership it keeps its term meanwhile and concedes it
// last. When ctx ends first, it cancels the contexts of the batches still
// in flight, waits the grace (WithGrace), and then gives up what is still
// unsettled: its tasks go back to Ready and a later settlement is refused
// (see interrupt); it then returns ctx.Err(), at most about four graces
// after ctx ended. Stop returns once the runtime's goroutines have
// returned, but for one that runs a handler call which ignored its context
// past the grace: that one returns with the call, once what the call left
// is settled or given up (a read-back of at most a grace, at least a
// second, at most ten). Stopping a stopped
// Manager does nothing; a Stop during another waits for the same end, and
// the first context to end hurries both.
func (m *Manager[Tx]) Stop(ctx context.Context) error {
	m.mu.Lock()
	r := m.run
	if r == nil {
		m.mu.Unlock()
		return nil
	}
	first := !r.stopping
	r.stopping = true
	m.mu.Unlock()
	unhurry := context.AfterFunc(ctx, r.hurryUp)
	defer unhurry()
	if first {
		m.shutdown(r)
	}
	<-r.stopped
	if r.interrupted && ctx.Err() != nil {
		return joinErrors([]error{r.stopErr, ctx.Err()})
	}
	return r.stopErr
}

// shutdown runs the stages of a stop and ends the run.
func (m *Manager[Tx]) shutdown(r *managerRun) {
	r.stopAfter()
	r.loopCancel()
	var errs []error
	if st, ok := m.handler.(Starter); ok {
		if err := st.Stop(r.hurry); err != nil && r.hurry.Err() == nil {
			errs = append(errs, fmt.Errorf("taskproc: stop the handler of %q: %w", m.topic, err))
		}
	}
	if m.waitFor(r.hurry, r.done) != nil {
		m.interrupt(r)
	}
	close(r.unelect)
	if r.elected != nil {
		<-r.elected // conceded, once every batch of its term was settled
	}
	r.cancel()
	r.hurryUp()
	m.mu.Lock()
	r.stopErr = joinErrors(errs)
	m.run = nil
	close(r.stopped)
	m.mu.Unlock()
}

// done reports, under the Manager's mu, whether every goroutine of r has
// returned and every batch is settled.
func (r *managerRun) done() bool {
	return r.loops+r.surges == 0 && r.schedules == 0 && r.handlers == 0 && len(r.batches) == 0
}

// joinErrors returns nil for no errors, the error itself for one, else errors.Join.
func joinErrors(errs []error) error {
	errs = slices.DeleteFunc(errs, func(err error) bool { return err == nil })
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// interrupt cancels the batches in flight, waits the grace, and gives up
// what is still unsettled: its tasks go back to Ready. A settlement being
// written when the grace ends reads back whether it went through and
// otherwise gives its tasks back, within one more grace; after that, the
// tasks of a settlement stuck in a caller's completion function that
// ignores its context are given back behind its back (whatever it writes
// later then finds them taken). Then it waits, briefly, for the loops.
func (m *Manager[Tx]) interrupt(r *managerRun) {
	m.update(func() { r.interrupted = true })
	for _, b := range m.inFlightOf(r) {
		b.cancel(errStopped)
	}
	m.waitGrace(func() bool { return len(r.batches) == 0 })
	for _, b := range m.inFlightOf(r) {
		b.revoke(errStopped)
	}
	m.waitGrace(func() bool { return len(r.batches) == 0 })
	if stuck := m.inFlightOf(r); len(stuck) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), m.cleanupTime())
		for _, b := range stuck {
			m.releaseAbandoned(ctx, b.tasks)
		}
		cancel()
	}
	r.cancel()
	m.waitGrace(func() bool { return r.loops+r.surges == r.inHandler && r.schedules == 0 })
}

// waitGrace waits until cond holds, at most the grace.
func (m *Manager[Tx]) waitGrace(cond func() bool) {
	grace, cancel := context.WithTimeout(context.Background(), m.s.grace)
	defer cancel()
	_ = m.waitFor(grace, cond)
}

// inFlightOf returns the unsettled batches of r.
func (m *Manager[Tx]) inFlightOf(r *managerRun) []*Batch {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Keys(r.batches))
}

// inFlight returns the unsettled batches of the current run.
func (m *Manager[Tx]) inFlight() []*Batch {
	m.mu.Lock()
	r := m.run
	m.mu.Unlock()
	if r == nil {
		return nil
	}
	return m.inFlightOf(r)
}

// waitFor waits until cond, checked under mu after every change of the
// runs' state, holds, or ctx ends.
func (m *Manager[Tx]) waitFor(ctx context.Context, cond func() bool) error {
	for {
		m.mu.Lock()
		if cond() {
			m.mu.Unlock()
			return nil
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// update changes the state of r under mu and wakes the waiters of waitFor.
func (m *Manager[Tx]) update(change func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	change()
	close(m.changed)
	m.changed = make(chan struct{})
}

// repository returns the repository the Manager polls with.
func (m *Manager[Tx]) repository() Repository[Tx] { return m.repo.Load().repo }

// resume wakes the local managers of topics, through the Client.
func (m *Manager[Tx]) resume(topics []string) {
	if len(topics) > 0 && m.s.resume != nil {
		m.s.resume(topics...)
	}
}

// registered returns an ErrUnknownTopic error that names the topics that
// are not registered, nil when all are: a loop of a topic that was never
// initialized would wait for ever, finding nothing.
func registered[Tx any](ctx context.Context, transact Transact[Tx], repo Repository[Tx], topics []string) error {
	var known []string
	err := retryConflicts(ctx, func() error {
		return transact(ctx, func(tx Tx) (err error) {
			known, err = repo.Topics(ctx, tx)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("read the topics: %w", err)
	}
	var missing []string
	for _, topic := range topics {
		if _, found := slices.BinarySearch(known, topic); !found {
			missing = append(missing, strconv.Quote(check.Short(topic)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("not registered, so its loop would wait for ever (Initialize it first): topic %s: %w", strings.Join(missing, ", "), taskapi.ErrUnknownTopic)
}

// dbNow returns the database's clock as estimated from the process's.
func (m *Manager[Tx]) dbNow() time.Time { return time.Now().Add(m.clock.get()) }

// now returns the runtime's clock: the one given with WithClock, else the
// database's as estimated.
func (m *Manager[Tx]) now() time.Time {
	if m.s.now != nil {
		return m.s.now()
	}
	return m.dbNow()
}

// waitUntil waits until the runtime's clock reads t or later, or ctx ends.
// A clock given with WithClock is read again every clockTick, so that a
// test that moves it sees the wait end at once.
func (m *Manager[Tx]) waitUntil(ctx context.Context, t time.Time) error {
	if m.s.now == nil {
		return sleep(ctx, max(t.Sub(m.now()), 0))
	}
	for m.now().Before(t) {
		if err := sleep(ctx, clockTick); err != nil {
			return err
		}
	}
	return nil
}

// holdReason is a reason for a loop to claim nothing; each is a bit of
// Manager.holds.
type holdReason int32

const (
	holdUser   holdReason = 1 << iota // SetClaiming(false)
	holdFenced                        // the owner fenced itself
	holdPaused                        // the topic is Paused or Draining
	holdLeader                        // another owner leads the topic (WithLeadership)
)

// demandOf returns what the handler of m holds at once: per batch, times
// the loops that each run a batch.
func demandOf[Tx any](m *Manager[Tx]) demand {
	n, what := holdsOf(m.handler)
	return demand{topic: m.topic, what: what, conns: n * m.s.pollers}
}
