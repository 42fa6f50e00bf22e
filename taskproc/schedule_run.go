package taskproc

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// scheduleRetry is how long a schedule waits after a failed push before it
// tries again.
const scheduleRetry = time.Second

// schedule is a Schedule that a Manager runs.
type schedule struct {
	Schedule
	periods periods
}

// runSchedule pushes the periods of s until r's loops stop.
func (m *Manager[Tx]) runSchedule(r *run, s schedule) {
	defer m.update(func() { r.schedules-- })
	for r.loopCtx.Err() == nil {
		wait := scheduleRetry
		if err := m.pushPeriods(r.loopCtx, s); err == nil {
			wait = m.untilNext(s)
		} else if r.loopCtx.Err() == nil {
			m.s.notify(Event{Kind: EventScheduleFailed, Topic: m.topic, Err: err})
		}
		if sleep(r.loopCtx, wait) != nil {
			return
		}
	}
}

// untilNext returns how long until the next period of s begins, or
// scheduleRetry when no period is to come.
func (m *Manager[Tx]) untilNext(s schedule) time.Duration {
	now := m.s.now()
	next, err := s.periods.next(now)
	if err != nil {
		return scheduleRetry
	}
	return max(next.Sub(now), time.Millisecond)
}

// pushPeriods pushes the tasks of the periods due now, in one transaction
// that advances the schedule's mark from what it read, so that no other
// process pushes them too.
func (m *Manager[Tx]) pushPeriods(ctx context.Context, s schedule) error {
	repo := m.repository()
	var pushed []taskapi.Task
	err := retryConflicts(ctx, func() error {
		pushed = nil
		return m.transact(ctx, func(tx Tx) error {
			mark, err := repo.Mark(ctx, tx, m.topic, s.Name)
			if err != nil {
				return err
			}
			list, err := duePeriods(s.periods, mark, m.s.now(), s.CatchUp)
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
