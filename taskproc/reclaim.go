package taskproc

import (
	"context"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A poll whose transaction failed may have committed all the same: when
// the connection breaks after the COMMIT went out, or the server restarts
// after it committed, the client cannot tell. The tasks it claimed are
// then Active under this owner with no batch holding them, and the keeper
// never expires the tasks of an owner that is alive. So after a failed
// poll, before it polls again, the Manager looks for Active tasks of its
// owner in its topic that none of its batches holds, and gives them back
// as Ready (reclaim). Polls take reclaiming's lock for reading from the
// poll until their batch is registered, so reclaiming never mistakes a
// batch being registered for a stray.

// reclaimPage is how many Active tasks one read of reclaim returns.
const reclaimPage = 1000

// pollFailed notes that a poll may have claimed tasks that no batch holds.
func (m *Manager[Tx]) pollFailed() { m.unsure.Store(true) }

// reclaim gives back as Ready the tasks that a failed poll may have
// claimed, when one failed and the owner is not fenced (a fenced owner's
// claims wait for expiry or for unfence). When the database cannot tell
// yet, it tries again before the next poll.
func (m *Manager[Tx]) reclaim(ctx context.Context, r *run) {
	if !m.unsure.Load() || m.fenced() {
		return
	}
	m.polling.Lock()
	defer m.polling.Unlock()
	if !m.unsure.Load() { // another loop of the Manager did it meanwhile
		return
	}
	held := m.heldTasks(r)
	owned, err := m.ownActive(ctx)
	if err != nil {
		return
	}
	m.unsure.Store(false)
	strays := slices.DeleteFunc(owned, func(t taskapi.Task) bool { return held[t.Sequence] })
	if len(strays) > 0 {
		m.s.logger.Warn("taskproc: giving back tasks that a failed poll claimed", "topic", m.topic, "tasks", len(strays))
		m.releaseAbandoned(ctx, strays)
	}
}

// heldTasks returns the sequences of the tasks that batches of r hold, and
// those kept to be given back later.
func (m *Manager[Tx]) heldTasks(r *run) map[int64]bool {
	held := map[int64]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for b := range r.batches {
		for _, t := range b.tasks {
			held[t.Sequence] = true
		}
	}
	for _, t := range m.abandoned {
		held[t.Sequence] = true
	}
	return held
}

// ownActive returns the Active tasks of the topic that the Manager's owner
// holds. There are no more Active tasks than the fleet has in flight, so
// they are read by pages of the topic's Active tasks.
func (m *Manager[Tx]) ownActive(ctx context.Context) ([]taskapi.Task, error) {
	repo := m.repository()
	active := taskapi.Listing{States: []taskapi.State{taskapi.Active}}
	var owned []taskapi.Task
	for cursor := taskapi.Inception; ; {
		var page []taskapi.Info
		err := m.transact(ctx, func(tx Tx) (err error) {
			page, err = repo.Page(ctx, tx, m.topic, active, cursor, reclaimPage, taskapi.Forward)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, info := range page {
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
