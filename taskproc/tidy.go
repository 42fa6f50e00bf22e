package taskproc

import (
	"context"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Nothing stays Active under a live owner without a batch that holds it:
// the keeper never expires the tasks of an owner that sends heartbeats.
// Tasks can end up so in two ways, and tidy gives them back as Ready:
//
//   - a settlement that could not be written once its batch was given up
//     (giveBackLater keeps its tasks), and the batches a fenced owner gave
//     up, when it recovers under its own name;
//   - a poll whose transaction failed but may have committed all the same
//     (the connection broke after its COMMIT went out): its tasks are then
//     Active under this owner, and no batch holds them (doubt);
//   - a failover to an asynchronous standby that lacked settlements the
//     old primary confirmed: their tasks are Active again under this
//     owner. The Client's Notifier losing its connection has every
//     Manager doubt (Client.recheck).
//
// A Client tidies every Manager after each heartbeat it confirmed,
// whatever its loops do (a held loop polls nothing); a loop tidies before
// it polls. Tidying holds the polling lock, so that it never takes a batch
// being registered for a stray.

// reclaimPage is how many Active tasks one read of ownActive returns.
const reclaimPage = 1000

// doubt notes that tasks may be Active under this owner that no batch
// holds (a poll failed, which may have committed; the Notifier lost its
// connection, as a failover cuts it), for the next tidy to look.
func (m *Manager[Tx]) doubt() { m.unsure.Store(true) }

// giveBackLater keeps tasks that are Active under this owner but no batch
// holds any more, for tidy.
func (m *Manager[Tx]) giveBackLater(tasks []taskapi.Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.abandoned = append(m.abandoned, tasks...)
}

// tidy gives back as Ready the tasks kept by giveBackLater and, after a
// failed poll, the Active tasks of the owner in the topic that no batch
// holds. A fenced Manager leaves them (recovery decides). What cannot be
// given back now is tried again at the next tidy.
func (m *Manager[Tx]) tidy(ctx context.Context) {
	if m.fenced() || (!m.unsure.Load() && !m.keeps()) {
		return
	}
	m.polling.Lock()
	defer m.polling.Unlock()
	m.mu.Lock()
	kept := m.abandoned
	m.abandoned = nil
	m.mu.Unlock()
	held := m.heldTasks()
	// A kept task that a batch holds (polled again after a give-back that
	// went through although it failed, or of a batch still settling its
	// other parts) waits for a later tidy: dropped, it would stay Active
	// under this live owner for good.
	var strays, later []taskapi.Task
	for _, t := range kept {
		if held[t.Sequence] {
			later = append(later, t)
		} else {
			strays = append(strays, t)
		}
	}
	m.giveBackLater(later)
	if m.unsure.Load() {
		owned, err := m.ownActive(ctx, m.repository(), taskapi.Unbounded)
		if err != nil {
			m.giveBackLater(strays)
			return
		}
		m.unsure.Store(false)
		for _, t := range owned {
			if !held[t.Sequence] && !slices.Contains(strays, t) {
				strays = append(strays, t)
			}
		}
	}
	if len(strays) > 0 {
		m.s.logger.Info("taskproc: giving back tasks left Active under this owner", "topic", m.topic, "tasks", len(strays))
		m.releaseAbandoned(ctx, strays)
	}
}

// keeps reports whether giveBackLater kept tasks.
func (m *Manager[Tx]) keeps() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.abandoned) > 0
}

// heldTasks returns the sequences of the tasks that the batches of the
// current run hold.
func (m *Manager[Tx]) heldTasks() map[int64]bool {
	held := map[int64]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run != nil {
		for b := range m.run.batches {
			for _, t := range b.tasks {
				held[t.Sequence] = true
			}
		}
	}
	return held
}

// releaseAbandoned gives back the tasks that are still Active and the
// owner's; when that fails, it keeps them to try again.
func (m *Manager[Tx]) releaseAbandoned(ctx context.Context, tasks []taskapi.Task) {
	repo := m.repository()
	for len(tasks) > 0 {
		err := m.own.run(ctx, func(ctx context.Context, tx Tx) error { return repo.Release(ctx, tx, m.topic, tasks...) })
		stale := staleOf(err)
		if stale == nil {
			if err != nil {
				m.s.logger.Warn("taskproc: give back tasks left Active", "topic", m.topic, "tasks", len(tasks), "err", err)
				m.giveBackLater(tasks)
			}
			return
		}
		tasks = without(tasks, stale)
	}
}

// ownActive returns the Active tasks within span of the topic that repo's
// owner holds. There are no more Active tasks than the fleet has in
// flight, so they are read by pages of the topic's Active tasks.
func (m *Manager[Tx]) ownActive(ctx context.Context, repo Repository[Tx], span taskapi.Range) ([]taskapi.Task, error) {
	active := taskapi.Listing{States: []taskapi.State{taskapi.Active}}
	var owned []taskapi.Task
	for cursor := max(span.From-1, taskapi.Inception); ; {
		var page []taskapi.Info
		err := m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
			page, err = repo.Page(ctx, tx, m.topic, active, cursor, reclaimPage, taskapi.Forward)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, info := range page {
			if info.Sequence > span.To {
				return owned, nil
			}
			if info.Owner == repo.Owner() {
				owned = append(owned, info.Task)
			}
		}
		if len(page) < reclaimPage {
			return owned, nil
		}
		cursor = page[len(page)-1].Sequence
	}
}
