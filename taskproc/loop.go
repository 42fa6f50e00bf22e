package taskproc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// firstBackoff is the first wait after a failed poll; it doubles with every
// failure that follows, up to the pause.
const firstBackoff = 10 * time.Millisecond

// loop is a poll loop of r, woken through wake; it returns when Stop
// begins, or dies of a panic of the limiter (EventFatal). c is its crew
// for a per-task handler, nil for any other. A surge loop (see surges)
// polls only while the handler waits for batches that full polls bring:
// it waits for wake, which the other loops signal then.
func (m *Manager[Tx]) loop(r *managerRun, wake chan struct{}, c *crew, surge bool) {
	defer func() {
		var fatal error
		if p := recover(); p != nil {
			fatal = fmt.Errorf("taskproc: the loop of %q died: %w", m.topic, panicError(p))
		}
		if fatal != nil { // told before the loop counts out: who sees it inactive can read why
			m.s.notify(Event{Kind: EventFatal, Topic: m.topic, Err: fatal})
		}
		m.update(func() {
			if surge {
				r.surges--
			} else {
				r.loops--
			}
		})
	}()
	var backoff time.Duration
	for r.loopCtx.Err() == nil {
		if m.held() {
			m.wait(r, wake, 0)
			continue
		}
		switch got, err := m.once(r, c); {
		case err != nil && surge: // the poll loop backs off; the surge loop waits for the next surge
			if !errors.Is(err, ErrQueueFull) {
				m.s.notify(Event{Kind: EventPollFailed, Topic: m.topic, Err: err})
			}
			m.wait(r, wake, 0)
		case errors.Is(err, ErrQueueFull):
			m.wait(r, wake, m.s.pause)
		case err != nil:
			backoff = min(max(2*backoff, firstBackoff), m.s.pause)
			m.s.notify(Event{Kind: EventPollFailed, Topic: m.topic, Err: err, Duration: backoff})
			m.wait(r, wake, backoff)
		default:
			backoff = 0
			m.after(r, wake, got, surge)
		}
	}
}

// after waits as a loop's turn that came to got calls for: an empty poll
// waits the pause (or a deferred task's due time); a full one, while the
// handler's workers wait for batches, has the surge loop, if any, poll
// beside; a surge loop waits for the next surge unless that holds for its
// own poll.
func (m *Manager[Tx]) after(r *managerRun, wake chan struct{}, got turn, surge bool) {
	if got == polledNone {
		m.s.notify(Event{Kind: EventEmpty, Topic: m.topic})
	}
	backlog := got == polledFull && m.starved()
	switch {
	case surge && !backlog:
		m.wait(r, wake, 0)
	case got == polledNone:
		m.wait(r, wake, m.due.wait(m.dbNow(), m.s.pause))
	case !surge && backlog && r.surge != nil:
		select {
		case r.surge <- struct{}{}:
		default:
		}
	}
}

// turn is what a loop's turn came to.
type turn int

const (
	polledNot  turn = iota // no poll: stopping, held, or no room in the crew
	polledNone             // a poll that found nothing
	polledSome             // a poll that found fewer tasks than it asked for
	polledFull             // a poll that found as many as it asked for
)

// errHeld is why a batch is given back unrun when the loop that polled it
// was held (a pause, a drain, SetClaiming(false)) while it polled.
var errHeld = errors.New("taskproc: the topic stopped claiming while the batch was polled")

// held reports whether the loop may claim nothing now: something holds it
// (see hold), or the owner's heartbeat is older than the expiry, so that
// another process may be expiring its tasks (the keeper fences it then).
func (m *Manager[Tx]) held() bool {
	return m.holds.Load() != 0 || (m.s.alive != nil && !m.s.alive())
}

// once acquires a slot, polls a batch and hands it over, and says what
// the turn came to. Stopping is no error: the loop's condition sees it.
// Whether the loop may claim is checked again once the slot is held, and
// once more when the poll returned: a batch polled while the topic stopped claiming (paused,
// drained, its term lost, its owner fenced) is given back unrun. claiming
// counts the loops in between, so that Drained never reports a loop that
// may still claim. With a crew (c), the loop first waits for room in it,
// and polls no more tasks than that.
func (m *Manager[Tx]) once(r *managerRun, c *crew) (turn, error) {
	size := m.s.size
	if c != nil {
		room := c.await(r.loopCtx.Done())
		if room == 0 {
			return polledNot, nil // stopping
		}
		size = min(size, room)
	}
	slot, err := m.s.limiter.Acquire(r.loopCtx, m.topic)
	switch {
	case r.loopCtx.Err() != nil:
		if err == nil {
			slot()
		}
		return polledNot, nil
	case errors.Is(err, ErrQueueFull):
		return polledNot, err
	case err != nil:
		return polledNot, fmt.Errorf("limiter: %w", err)
	}
	m.tidy(r.ctx)
	m.claiming.Add(1)
	claimed := sync.OnceFunc(func() { m.claiming.Add(-1) }) // once what it polled is registered, or given back
	defer claimed()
	term, ok := m.term()
	if m.held() || !ok {
		slot()
		return polledNot, nil
	}
	m.polling.RLock()
	tasks, err := m.poll(r.ctx, term, size)
	var b *Batch
	if len(tasks) > 0 {
		b = m.newBatch(r, tasks, slot, term, c)
	}
	m.polling.RUnlock()
	if err != nil {
		m.doubt()
		slot()
		if r.loopCtx.Err() != nil {
			return polledNot, nil // the poll was cut short by Stop
		}
		return polledNot, err
	}
	if b == nil {
		slot()
		return polledNone, nil
	}
	if cause := m.stillClaiming(term); cause != nil {
		b.revoke(cause)
		return polledNot, nil
	}
	claimed() // not while the handler runs or the loop waits: the batch counts in flight now
	m.dispatch(r, b)
	// A Buffered worker or a crew's goroutine that the batch was handed to
	// starts before the loop polls again: readied by this goroutine, Go's
	// scheduler runs it next on this thread, but only once the loop blocks,
	// which it does after it has built and sent its next poll (some 50 µs
	// of a task's commit → start at 100 tasks/s; see
	// TestAHandedOverBatchStartsBeforeTheNextPoll).
	runtime.Gosched()
	if len(tasks) < size {
		return polledSome, nil
	}
	return polledFull, nil
}

// stillClaiming returns why a batch polled under term may not run, nil
// when it may.
func (m *Manager[Tx]) stillClaiming(term taskapi.Term) error {
	switch now, ok := m.term(); {
	case m.fenced() || (m.s.alive != nil && !m.s.alive()):
		return ErrFenced
	case !ok || now.Number != term.Number:
		return ErrTermLost
	case m.holds.Load() != 0:
		return errHeld
	}
	return nil
}

// wait waits d (for ever when d is zero) or until the loop is woken
// through wake or stopped.
func (m *Manager[Tx]) wait(r *managerRun, wake chan struct{}, d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-r.loopCtx.Done():
	case <-wake: // Resume and a push of deferred tasks touched the due watch
		m.s.notify(Event{Kind: EventWoken, Topic: m.topic})
	case <-timeout:
	}
}

// poll polls a batch of up to size tasks in a transaction of its own,
// which first reads when the next deferred task is due, if that may have
// changed (see dueWatch). Under leadership the poll claims only while term
// is current.
func (m *Manager[Tx]) poll(ctx context.Context, term taskapi.Term, size int) ([]taskapi.Task, error) {
	opts := []taskapi.PollOption{m.s.order, m.s.condition}
	if m.s.revival {
		// Expired tasks come back in their place (see rescue): an
		// identifier's later task waits behind them, so that its order
		// holds across the crash of a process.
		opts = append(opts, taskapi.AwaitRevival{})
	}
	if term.Number > 0 {
		opts = append(opts, term)
	}
	repo := m.repository()
	// A repository that keeps limits says when they held the poll back.
	var note *taskapi.LimitNote
	if _, limits := repo.(taskapi.Regulator[Tx]); limits {
		note = &taskapi.LimitNote{}
		opts = append(opts, note)
	}
	var tasks []taskapi.Task
	var next time.Time
	wanted := m.due.wanted()
	if !wanted {
		ctx = taskapi.SingleStatement(ctx) // the poll alone: no BEGIN and COMMIT where the backend can
	}
	err := m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
		// NextDue before the poll: a task that becomes due in between is
		// then either polled or waited for, never missed.
		if wanted {
			if next, err = repo.NextDue(ctx, tx, m.topic); err != nil {
				return err
			}
			if err = measureClock(ctx, tx, repo, m.clock); err != nil { // to wait for next on the database's clock
				return err
			}
		}
		tasks, err = repo.Poll(ctx, tx, m.topic, size, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if note != nil && note.Held {
		m.s.notify(Event{Kind: EventLimited, Topic: m.topic, Tasks: tasks})
	}
	m.due.polled(len(tasks) == 0)
	if wanted {
		m.due.set(next)
	}
	return tasks, nil
}

// newBatch makes a batch of tasks polled under term that holds slot until
// it is settled, and room in c, the loop's crew, if it has one, until its
// handler gives it to c.
func (m *Manager[Tx]) newBatch(r *managerRun, tasks []taskapi.Task, slot func(), term taskapi.Term, c *crew) *Batch {
	writes, stopWrites := context.WithCancelCause(context.WithoutCancel(r.ctx))
	ctx, cancel := context.WithCancelCause(writes)
	b := &Batch{topic: m.topic, tasks: tasks, polled: time.Now(), ctx: ctx, cancel: cancel,
		writes: writes, stopWrites: stopWrites, term: term, done: make(chan struct{})}
	repo := m.repository()
	b.settler, b.repo = &batchSettler[Tx]{m: m, r: r, repo: repo, slot: slot}, repo
	if c != nil {
		b.crew = c
		c.reserve(b)
	}
	m.update(func() { r.batches[b] = struct{}{} })
	m.stats.polled(len(tasks))
	m.s.notify(Event{Kind: EventPolled, Topic: m.topic, Tasks: tasks})
	return b
}

// dispatch hands b to the handler on the loop's goroutine, or, for a
// per-task handler (b has a crew), on a goroutine of its own, so that the
// loop polls for the crew's free workers meanwhile; unless Stop began
// meanwhile (then b goes back at once).
func (m *Manager[Tx]) dispatch(r *managerRun, b *Batch) {
	if r.loopCtx.Err() != nil {
		b.revoke(errStopped)
		return
	}
	m.s.notify(Event{Kind: EventDispatched, Topic: m.topic, Tasks: b.tasks})
	if b.crew != nil {
		m.update(func() { r.handlers++ })
		go func() {
			defer m.update(func() { r.handlers-- })
			runHandler(m.handler, b.ctx, b)
		}()
		return
	}
	m.update(func() { r.inHandler++ })
	runHandler(m.handler, b.ctx, b)
	m.update(func() { r.inHandler-- })
}

// runHandler calls h for b. An error (or a panic) of h fails b, unless the
// runtime gave up on b: then b is released. A batch settled already stays
// as it is.
func runHandler(h Handler, ctx context.Context, b *Batch) {
	switch err := handle(h, ctx, b); {
	case err == nil:
	case b.ctx.Err() != nil:
		_ = b.Release()
	default:
		_ = b.Fail(err)
	}
}

// handle calls h, turning a panic into an error.
func handle(h Handler, ctx context.Context, b *Batch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return h.Handle(ctx, b)
}
