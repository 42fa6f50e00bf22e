package taskproc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// firstBackoff is the first wait after a failed poll; it doubles with every
// failure that follows, up to the pause.
const firstBackoff = 10 * time.Millisecond

// loop is a poll loop of r, woken through wake; it returns when Stop
// begins, or dies of a panic of the limiter (EventFatal).
func (m *Manager[Tx]) loop(r *run, wake chan struct{}) {
	defer func() {
		var fatal error
		if p := recover(); p != nil {
			fatal = fmt.Errorf("taskproc: the loop of %q died: %w", m.topic, panicError(p))
		}
		m.update(func() { r.loops-- })
		if fatal != nil {
			m.s.notify(Event{Kind: EventFatal, Topic: m.topic, Err: fatal})
		}
	}()
	var backoff time.Duration
	for r.loopCtx.Err() == nil {
		if m.holds.Load() != 0 {
			m.wait(r, wake, 0)
			continue
		}
		switch err := m.once(r, wake); {
		case errors.Is(err, ErrQueueFull):
			m.wait(r, wake, m.s.pause)
		case err != nil:
			backoff = min(max(2*backoff, firstBackoff), m.s.pause)
			m.s.notify(Event{Kind: EventPollFailed, Topic: m.topic, Err: err, Duration: backoff})
			m.wait(r, wake, backoff)
		default:
			backoff = 0
		}
	}
}

// once acquires a slot, polls a batch and hands it over. Stopping is no
// error: the loop's condition sees it.
func (m *Manager[Tx]) once(r *run, wake chan struct{}) error {
	slot, err := m.s.limiter.Acquire(r.loopCtx, m.topic)
	switch {
	case r.loopCtx.Err() != nil:
		if err == nil {
			slot()
		}
		return nil
	case errors.Is(err, ErrQueueFull):
		return err
	case err != nil:
		return fmt.Errorf("limiter: %w", err)
	}
	m.giveBack(r.ctx)
	m.reclaim(r.ctx, r)
	m.polling.RLock()
	tasks, err := m.poll(r.ctx)
	var b *Batch
	if len(tasks) > 0 {
		b = m.newBatch(r, tasks, slot)
	}
	m.polling.RUnlock()
	if err != nil {
		m.pollFailed()
		slot()
		if r.loopCtx.Err() != nil {
			return nil // the poll was cut short by Stop
		}
		return err
	}
	m.handOver(r, wake, b, slot)
	return nil
}

// handOver hands a polled batch to the handler, or waits the pause when
// the poll found nothing (b is nil).
func (m *Manager[Tx]) handOver(r *run, wake chan struct{}, b *Batch, slot func()) {
	if b == nil {
		slot()
		m.s.notify(Event{Kind: EventEmpty, Topic: m.topic})
		m.wait(r, wake, m.due.wait(time.Now(), m.s.pause))
		return
	}
	m.dispatch(r, b)
}

// wait waits d (for ever when d is zero) or until the loop is woken
// through wake or stopped.
func (m *Manager[Tx]) wait(r *run, wake chan struct{}, d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-r.loopCtx.Done():
	case <-wake:
		m.due.touch()
		m.s.notify(Event{Kind: EventWoken, Topic: m.topic})
	case <-timeout:
	}
}

// poll polls a batch in a transaction of its own, which first reads when
// the next deferred task is due, if that may have changed (see dueWatch).
func (m *Manager[Tx]) poll(ctx context.Context) ([]taskapi.Task, error) {
	repo := m.repository()
	var tasks []taskapi.Task
	var next time.Time
	wanted := m.due.wanted()
	err := m.transact(ctx, func(tx Tx) (err error) {
		// NextDue before the poll: a task that becomes due in between is
		// then either polled or waited for, never missed.
		if wanted {
			if next, err = repo.NextDue(ctx, tx, m.topic); err != nil {
				return err
			}
		}
		tasks, err = repo.Poll(ctx, tx, m.topic, m.s.size, m.s.order, m.s.condition)
		return err
	})
	if err != nil {
		return nil, err
	}
	m.due.polled(len(tasks) == 0)
	if wanted {
		m.due.set(next)
	}
	return tasks, nil
}

// newBatch makes a batch of tasks that holds slot until it is settled.
func (m *Manager[Tx]) newBatch(r *run, tasks []taskapi.Task, slot func()) *Batch {
	ctx, cancel := context.WithCancelCause(r.ctx)
	b := &Batch{topic: m.topic, tasks: tasks, polled: time.Now(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	repo := m.repository()
	b.settler, b.repo = &batchSettler[Tx]{m: m, r: r, repo: repo, slot: slot}, repo
	m.update(func() { r.batches[b] = struct{}{} })
	m.stats.polled(len(tasks))
	m.s.notify(Event{Kind: EventPolled, Topic: m.topic, Tasks: tasks})
	return b
}

// dispatch hands b to the handler on the loop's goroutine, unless Stop
// began meanwhile (then b goes back at once) or the owner fenced itself
// (then b is given up).
func (m *Manager[Tx]) dispatch(r *run, b *Batch) {
	switch {
	case m.fenced(): // polled as an owner that fenced itself meanwhile
		_ = b.settle(func() error { return b.settler.abandon(b, ErrFenced) })
		return
	case r.loopCtx.Err() != nil:
		_ = b.Release()
		return
	}
	m.s.notify(Event{Kind: EventDispatched, Topic: m.topic, Tasks: b.tasks})
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
