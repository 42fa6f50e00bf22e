package taskproc_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// periodsOf returns the periods that the tasks of topic stand for, by
// their references, ascending, failing t on a reference that is none.
func (e *env[Tx]) periodsOf(name string) []time.Time {
	e.t.Helper()
	var out []time.Time
	for _, info := range e.infos(name) {
		p, err := time.Parse(time.RFC3339Nano, info.Reference)
		if err != nil {
			e.t.Fatalf("task %d's reference %q is no period: %v", info.Sequence, info.Reference, err)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// at is a clock that stands still at t.
func at(t time.Time) taskproc.TopicOption { return taskproc.WithClock(func() time.Time { return t }) }

// scheduled runs a Manager of topic as owner with the options until the
// topic holds n tasks, and stops it.
func (e *env[Tx]) scheduled(owner string, n int, opts ...taskproc.TopicOption) {
	e.t.Helper()
	m, err := taskproc.NewManager[Tx](e.owner(owner), e.transact, topic, taskproc.Sequential(succeed), opts...)
	if err != nil {
		e.t.Fatalf("NewManager: %v", err)
	}
	e.start(m)
	e.eventually(fmt.Sprintf("%d tasks", n), func() bool { return len(e.infos(topic)) >= n })
	stopWithin(e.t, m.Stop)
}

func scheduleCases[Tx any](all map[string]suiteCase[Tx]) {
	all["ThreeRuntimesPushEachPeriodOfAScheduleOnce"] = func(t *testing.T, e *env[Tx]) {
		const period, want = 40 * time.Millisecond, 12
		tick := taskproc.Schedule{Name: "tick", Every: period, Task: taskapi.Creation{Identifier: "tick", Input: "{}"}, CatchUp: 1000}
		var managers []*taskproc.Manager[Tx]
		for i := range 3 {
			m, err := taskproc.NewManager[Tx](e.owner(fmt.Sprint("runtime-", i)), e.transact, topic, taskproc.Sequential(succeed),
				taskproc.WithSchedule(tick))
			if err != nil {
				t.Fatal(err)
			}
			e.start(m)
			managers = append(managers, m)
		}
		e.eventually(fmt.Sprintf("%d periods", want), func() bool { return len(e.infos(topic)) >= want })
		for _, m := range managers {
			stopWithin(t, m.Stop)
		}
		periods := e.periodsOf(topic)
		for i, p := range periods {
			if !p.Equal(p.Truncate(period)) {
				t.Errorf("period %v does not begin at a multiple of %v", p, period)
			}
			if i > 0 && !p.Equal(periods[i-1].Add(period)) {
				t.Errorf("period %v follows %v: a period pushed twice or missed", p, periods[i-1])
			}
		}
		for _, info := range e.infos(topic) {
			if info.Identifier != "tick" || info.Input != "{}" {
				t.Errorf("scheduled task %+v, want the schedule's identifier and input", info)
			}
		}
	}

	all["MissedPeriodsArePushedOnlyWithCatchUp"] = func(t *testing.T, e *env[Tx]) {
		start := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
		hourly := taskproc.Schedule{Name: "hourly", Every: time.Hour, Task: taskapi.Creation{Identifier: "report"}}
		e.scheduled("first", 1, taskproc.WithSchedule(hourly), at(start))
		e.scheduled("after-downtime", 2, taskproc.WithSchedule(hourly), at(start.Add(5*time.Hour)))
		hourly.CatchUp = 3
		e.scheduled("catching-up", 6, taskproc.WithSchedule(hourly), at(start.Add(10*time.Hour)))
		hour := func(h int) time.Time { return time.Date(2026, 11, 25, h, 0, 0, 0, time.UTC) }
		want := []time.Time{hour(10), hour(15), hour(17), hour(18), hour(19), hour(20)}
		if got := e.periodsOf(topic); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("periods pushed %v, want %v: without catch-up only the current period, with it three missed ones", got, want)
		}
		mark, err := e.repo.Mark(e.ctx, e.db, topic, "hourly")
		if err != nil || !mark.Equal(hour(20)) {
			t.Errorf("Mark = %v, %v; want the last period pushed, %v", mark, err, hour(20))
		}
	}

	all["MovingAClockOfWithClockCountsAtOnce"] = func(t *testing.T, e *env[Tx]) {
		// WithClock is for tests that do not wait for real time: moving
		// the clock one period on pushes the next period's task at once,
		// not after an hour of real time.
		var now atomic.Pointer[time.Time]
		start := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
		now.Store(&start)
		m, err := taskproc.NewManager[Tx](e.repo, e.transact, topic, taskproc.Sequential(succeed),
			taskproc.WithSchedule(taskproc.Schedule{Name: "hourly", Every: time.Hour, Task: taskapi.Creation{Identifier: "report"}}),
			taskproc.WithClock(func() time.Time { return *now.Load() }))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		e.start(m)
		e.eventually("the first period", func() bool { return len(e.infos(topic)) == 1 })
		next := start.Add(time.Hour)
		now.Store(&next)
		e.eventually("the next period, once the clock moved", func() bool { return len(e.infos(topic)) == 2 })
		hour := func(h int) time.Time { return time.Date(2026, 11, 25, h, 0, 0, 0, time.UTC) }
		if got := e.periodsOf(topic); !slices.EqualFunc(got, []time.Time{hour(10), hour(11)}, time.Time.Equal) {
			t.Errorf("periods %v, want 10:00 and 11:00", got)
		}
	}

	all["ACronScheduleFollowsItsExpressionInItsLocation"] = func(t *testing.T, e *env[Tx]) {
		now := time.Date(2026, 1, 5, 10, 17, 30, 0, time.UTC)
		plus2 := time.FixedZone("UTC+2", 2*60*60)
		e.scheduled("cron", 2, at(now),
			taskproc.WithSchedule(taskproc.Schedule{Name: "quarter", Cron: "*/15 * * * *", Task: taskapi.Creation{Identifier: "q"}}),
			taskproc.WithSchedule(taskproc.Schedule{Name: "morning", Cron: "0 9 * * *", Location: plus2, Task: taskapi.Creation{Identifier: "m"}}))
		got := map[string]string{}
		for _, info := range e.infos(topic) {
			got[info.Identifier] = info.Reference
		}
		if got["q"] != "2026-01-05T10:15:00Z" || got["m"] != "2026-01-05T07:00:00Z" {
			t.Errorf("periods %v, want the quarter at 10:15 and 09:00 at UTC+2, 07:00 UTC", got)
		}
	}

	all["BadSchedulesAreRefused"] = func(t *testing.T, e *env[Tx]) {
		good := taskproc.Schedule{Name: "s", Every: time.Minute, Task: taskapi.Creation{Identifier: "x"}}
		bad := map[string][]taskproc.Schedule{
			"no name":             {func(s taskproc.Schedule) taskproc.Schedule { s.Name = ""; return s }(good)},
			"a bad name":          {func(s taskproc.Schedule) taskproc.Schedule { s.Name = "\xff"; return s }(good)},
			"no period":           {func(s taskproc.Schedule) taskproc.Schedule { s.Every = 0; return s }(good)},
			"both periods":        {func(s taskproc.Schedule) taskproc.Schedule { s.Cron = "@hourly"; return s }(good)},
			"a bad cron":          {func(s taskproc.Schedule) taskproc.Schedule { s.Every, s.Cron = 0, "61 * * * *"; return s }(good)},
			"a tiny period":       {func(s taskproc.Schedule) taskproc.Schedule { s.Every = time.Microsecond; return s }(good)},
			"a negative catch":    {func(s taskproc.Schedule) taskproc.Schedule { s.CatchUp = -1; return s }(good)},
			"a bad insertion":     {func(s taskproc.Schedule) taskproc.Schedule { s.Insertion = 9; return s }(good)},
			"no identifier":       {func(s taskproc.Schedule) taskproc.Schedule { s.Task.Identifier = ""; return s }(good)},
			"the same name twice": {good, good},
		}
		for what, list := range bad {
			var opts []taskproc.TopicOption
			for _, s := range list {
				opts = append(opts, taskproc.WithSchedule(s))
			}
			if _, err := taskproc.NewManager[Tx](e.repo, e.transact, topic, taskproc.Sequential(succeed), opts...); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("a schedule with %s: %v, want ErrInvalidArgument", what, err)
			}
		}
	}
}
