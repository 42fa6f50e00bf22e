package taskproc

import (
	"context"
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
// Their tasks stay Active under the fenced owner until expiry, or until it
// recovers under its own name.
func (m *Manager[Tx]) fence() {
	m.hold(holdFenced, true)
	for _, b := range m.inFlight() {
		b.revoke(ErrFenced)
	}
	m.loseTerm(ErrFenced) // it may have been replaced as the leader too
}

// unfence makes the Manager claim again: as repo, the owner's successor,
// which leaves the fenced owner's tasks to expiry, or, when repo is nil, as
// the same owner, which first gives back as Ready the tasks it gave up
// (those not taken away meanwhile).
func (m *Manager[Tx]) unfence(ctx context.Context, repo Repository[Tx]) {
	if repo != nil {
		m.mu.Lock()
		m.abandoned = nil
		m.mu.Unlock()
		m.unsure.Store(false)
		m.SetRepository(repo)
		m.hold(holdFenced, false)
		return
	}
	m.hold(holdFenced, false)
	m.tidy(ctx)
}

// fenced reports whether the Manager gave up its owner's claims.
func (m *Manager[Tx]) fenced() bool { return m.holds.Load()&int32(holdFenced) != 0 }
