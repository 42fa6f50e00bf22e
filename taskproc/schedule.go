package taskproc

import (
	"fmt"
	"time"

	"github.com/adhocore/gronx"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// A Schedule makes a Manager push a task to its topic once per period. Every
// process that runs the same schedule (same topic and Name) may push a
// period's task, and exactly one does: the push is conditional on the
// schedule's mark in the database (taskapi.Scheduler), advanced by
// compare-and-set in the push's transaction. No leader is needed.
//
// A period's task is pushed as soon as the period begins, by the clock of
// the process (WithClock). A schedule that was never run pushes the
// current period's task when it starts. After a time when no process ran
// it, the current period's task is pushed, and, with CatchUp, the missed
// periods before it too.
type Schedule struct {
	// Name names the schedule within its topic.
	Name string
	// Every is the length of a fixed period; periods begin at the
	// multiples of Every since the zero time (UTC), the same in every
	// process. Exactly one of Every and Cron is set.
	Every time.Duration
	// Cron is a cron expression: five fields (minute, hour, day of month,
	// month, day of week), six with seconds first, or a tag such as
	// "@hourly". A period begins at each time it matches, in Location.
	Cron string
	// Location is where Cron's times are; UTC when nil.
	Location *time.Location
	// Task is what each period pushes. Its Reference, when empty, is the
	// beginning of the period in RFC 3339 (UTC), so that each task tells
	// which period it stands for.
	Task taskapi.Creation
	// Insertion is how the tasks are pushed (the zero value is
	// taskapi.Append).
	Insertion taskapi.Insertion
	// CatchUp is how many missed periods, at most, are pushed besides the
	// current one after a time when no process ran the schedule. Zero (the
	// default) pushes the current period only.
	CatchUp int
}

// WithSchedule makes the Manager push the tasks of s to its topic, while it
// runs (see Schedule). It may be given several times, for schedules with
// different names.
func WithSchedule(s Schedule) TopicOption {
	return func(st *settings) { st.schedules = append(st.schedules, s) }
}

// periods tells when the periods of a schedule begin.
type periods interface {
	// current returns the beginning of the period that holds t.
	current(t time.Time) (time.Time, error)
	// previous returns the beginning of the period before the one that
	// begins at t.
	previous(t time.Time) (time.Time, error)
	// next returns the beginning of the period after the one that holds t.
	next(t time.Time) (time.Time, error)
}

// fixed are periods of one length.
type fixed time.Duration

func (f fixed) current(t time.Time) (time.Time, error) {
	return t.UTC().Truncate(time.Duration(f)), nil
}

func (f fixed) previous(t time.Time) (time.Time, error) {
	return t.UTC().Add(-time.Duration(f)), nil
}

func (f fixed) next(t time.Time) (time.Time, error) {
	c, _ := f.current(t)
	return c.Add(time.Duration(f)), nil
}

// cron are the periods of a cron expression.
type cron struct {
	expr string
	loc  *time.Location
}

func (c cron) current(t time.Time) (time.Time, error) {
	p, err := gronx.PrevTickBefore(c.expr, t.In(c.loc), true)
	return p.UTC(), err
}

func (c cron) previous(t time.Time) (time.Time, error) {
	p, err := gronx.PrevTickBefore(c.expr, t.In(c.loc), false)
	return p.UTC(), err
}

func (c cron) next(t time.Time) (time.Time, error) {
	p, err := gronx.NextTickAfter(c.expr, t.In(c.loc), false)
	return p.UTC(), err
}

// periodsOf checks s and returns its periods.
func periodsOf(s Schedule) (periods, error) {
	if err := check.Schedule(s.Name); err != nil {
		return nil, fmt.Errorf("taskproc: schedule %q: %w", check.Short(s.Name), err)
	}
	var problem string
	switch {
	case (s.Every > 0) == (s.Cron != ""):
		problem = "a schedule needs either Every or Cron"
	case s.Every < 0 || (s.Every > 0 && s.Every < time.Millisecond):
		problem = fmt.Sprintf("the period %v of a schedule is below a millisecond", s.Every)
	case s.Cron != "" && !gronx.IsValid(s.Cron):
		problem = fmt.Sprintf("the cron expression %q is not valid", s.Cron)
	case s.CatchUp < 0:
		problem = "a negative CatchUp"
	case !s.Insertion.Valid():
		problem = fmt.Sprintf("the insertion %v is not defined", s.Insertion)
	}
	if problem != "" {
		return nil, fmt.Errorf("taskproc: schedule %q: %s: %w", check.Short(s.Name), problem, taskapi.ErrInvalidArgument)
	}
	if err := check.Creation(s.Task); err != nil {
		return nil, fmt.Errorf("taskproc: schedule %q: %w", check.Short(s.Name), err)
	}
	if s.Every > 0 {
		return fixed(s.Every), nil
	}
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	return cron{expr: s.Cron, loc: loc}, nil
}

// schedulesOf checks list and returns its schedules: each valid, and no
// name twice.
func schedulesOf(list []Schedule) ([]schedule, error) {
	seen := map[string]bool{}
	out := make([]schedule, 0, len(list))
	for _, s := range list {
		p, err := periodsOf(s)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("taskproc: schedule %q given twice: %w", check.Short(s.Name), taskapi.ErrInvalidArgument)
		}
		seen[s.Name] = true
		out = append(out, schedule{Schedule: s, periods: p})
	}
	return out, nil
}

// duePeriods returns the periods to push at now, oldest first, given the mark
// (the last period pushed; zero for none): the current period when it is
// after the mark, and up to catchUp missed periods after the mark before it.
func duePeriods(p periods, mark, now time.Time, catchUp int) ([]time.Time, error) {
	cur, err := p.current(now)
	if err != nil || (!mark.IsZero() && !cur.After(mark)) {
		return nil, err
	}
	list := []time.Time{cur}
	for range catchUp {
		if mark.IsZero() {
			break
		}
		prev, err := p.previous(list[0])
		if err != nil {
			return nil, err
		}
		if !prev.After(mark) {
			break
		}
		list = append([]time.Time{prev}, list...)
	}
	return list, nil
}

// schedule is a Schedule that a Manager runs.
type schedule struct {
	Schedule
	periods periods
}
