package taskproc

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// scheduleRetry is how long a schedule waits after a failed push before it
// tries again.
const scheduleRetry = time.Second

// runSchedule pushes the periods of s until r's loops stop: the periods
// due now, then again when the next period begins on the runtime's clock
// (see waitUntil), or scheduleRetry after a failed push.
func (m *Manager[Tx]) runSchedule(r *managerRun, s schedule) {
	defer m.update(func() { r.schedules-- })
	for r.loopCtx.Err() == nil {
		err := m.pushPeriods(r.loopCtx, s)
		next, nerr := s.periods.next(m.now())
		switch {
		case err != nil && r.loopCtx.Err() == nil:
			m.s.notify(Event{Kind: EventScheduleFailed, Topic: m.topic, Err: err})
			err = sleep(r.loopCtx, scheduleRetry)
		case nerr != nil: // no period to come
			err = sleep(r.loopCtx, scheduleRetry)
		default:
			err = m.waitUntil(r.loopCtx, next)
		}
		if err != nil {
			return
		}
	}
}

// pushPeriods pushes the tasks of the periods due now, in one transaction
// that advances the schedule's mark from what it read, so that no other
// process pushes them too.
func (m *Manager[Tx]) pushPeriods(ctx context.Context, s schedule) error {
	repo := m.repository()
	var pushed []taskapi.Task
	err := retryConflicts(ctx, func() error {
		pushed = nil
		return m.own.run(ctx, func(ctx context.Context, tx Tx) error {
			mark, err := repo.Mark(ctx, tx, m.topic, s.Name)
			if err != nil {
				return err
			}
			list, err := duePeriods(s.periods, mark, m.now(), s.CatchUp)
			if err != nil || len(list) == 0 {
				return err
			}
			advanced, err := repo.Advance(ctx, tx, m.topic, s.Name, mark, list[len(list)-1])
			if err != nil || !advanced {
				return err // another process pushed them
			}
			pushed, err = repo.Push(ctx, tx, m.topic, s.Insertion, creationsOf(s.Task, list)...)
			return err
		})
	})
	if err == nil && len(pushed) > 0 {
		m.s.notify(Event{Kind: EventScheduled, Topic: m.topic, Tasks: pushed})
		m.Resume()
	}
	return err
}

// creationsOf returns task once for each period, referring to the period
// unless it has a reference of its own.
func creationsOf(task taskapi.Creation, periods []time.Time) []taskapi.Creation {
	creations := make([]taskapi.Creation, len(periods))
	for i, p := range periods {
		creations[i] = task
		if task.Reference == "" {
			creations[i].Reference = p.UTC().Format(time.RFC3339Nano)
		}
	}
	return creations
}
