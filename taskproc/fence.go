package taskproc

import (
	"context"
	"errors"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// ErrFenced is the cause with which a fenced owner gives up the batches it
// holds: it could not confirm its heartbeat for longer than the expiry, so
// another process may have expired and revived their tasks.
var ErrFenced = errors.New("taskproc: fenced: the owner could not confirm its heartbeat in time")

// holdReason is a reason for a loop to claim nothing; each is a bit of
// Manager.holds.
type holdReason int32

const (
	holdUser   holdReason = 1 << iota // SetClaiming(false)
	holdFenced                        // the owner fenced itself
	holdPaused                        // the topic is Paused or Draining
	holdLeader                        // another owner leads the topic (WithLeadership)
)

// hold sets (on) or clears a reason to claim nothing, and wakes the loop
// when nothing holds it any more.
func (m *Manager[Tx]) hold(reason holdReason, on bool) {
	for {
		old := m.holds.Load()
		next := old &^ int32(reason)
		if on {
			next = old | int32(reason)
		}
		if m.holds.CompareAndSwap(old, next) {
			if next == 0 && old != 0 {
				m.Resume()
			}
			return
		}
	}
}

// fence stops claiming and gives up every batch in flight without a write:
// their contexts end with ErrFenced, and they can no longer be settled.
// Their tasks stay Active under the fenced owner until expiry.
func (m *Manager[Tx]) fence() {
	m.hold(holdFenced, true)
	m.mu.Lock()
	r := m.run
	m.mu.Unlock()
	if r == nil {
		return
	}
	for _, b := range m.inFlight(r) {
		_ = b.settle(func() error { return b.settler.abandon(b, ErrFenced) })
	}
}

// unfence makes the Manager claim again: as repo, the owner's successor,
// or, when repo is nil, as the same owner, which first gives back as Ready
// the tasks it gave up (those not taken away meanwhile).
func (m *Manager[Tx]) unfence(ctx context.Context, repo Repository[Tx]) {
	m.mu.Lock()
	abandoned := m.abandoned
	m.abandoned = nil
	m.mu.Unlock()
	if repo != nil {
		m.SetRepository(repo)
	} else {
		m.releaseAbandoned(ctx, abandoned)
	}
	m.hold(holdFenced, false)
}

// releaseAbandoned gives back the tasks of abandoned batches that are still
// Active and the owner's; when that fails, it keeps them to try again.
func (m *Manager[Tx]) releaseAbandoned(ctx context.Context, abandoned []taskapi.Task) {
	repo := m.repository()
	for len(abandoned) > 0 {
		err := m.transact(ctx, func(tx Tx) error { return repo.Release(ctx, tx, m.topic, abandoned...) })
		var stale *taskapi.StateError
		if !errors.As(err, &stale) {
			if err != nil {
				m.s.logger.Warn("taskproc: give back tasks left Active", "topic", m.topic, "tasks", len(abandoned), "err", err)
				m.giveBackLater(abandoned)
			}
			return
		}
		abandoned = slices.DeleteFunc(abandoned, func(t taskapi.Task) bool { return slices.Contains(stale.Sequences, t.Sequence) })
	}
}

// giveBackLater keeps tasks that are Active under this owner but no batch
// holds any more, to give them back as Ready when the database answers
// again (giveBack), instead of leaving them to expiry, which never comes
// for a live owner.
func (m *Manager[Tx]) giveBackLater(tasks []taskapi.Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.abandoned = append(m.abandoned, tasks...)
}

// giveBack releases the tasks kept by giveBackLater, unless the Manager is
// fenced (unfence releases them then).
func (m *Manager[Tx]) giveBack(ctx context.Context) {
	m.mu.Lock()
	tasks := m.abandoned
	if m.fenced() {
		tasks = nil
	} else {
		m.abandoned = nil
	}
	m.mu.Unlock()
	if len(tasks) > 0 {
		m.releaseAbandoned(ctx, tasks)
	}
}

// fenced reports whether the Manager gave up its owner's claims.
func (m *Manager[Tx]) fenced() bool { return m.holds.Load()&int32(holdFenced) != 0 }
