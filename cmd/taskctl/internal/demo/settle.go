package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// demoTick is how often the demo counts its tasks while it waits.
const demoTick = 250 * time.Millisecond

// demoStatus is what the demo's topics hold at a moment.
type demoStatus struct {
	counts  map[string]map[taskapi.State]taskapi.Summary
	pending int64 // READY, ACTIVE or EXPIRED tasks: work still to do
	settled int64 // tasks in any other state
}

// status counts the tasks of every demo topic, one topic at a time (on
// PostgreSQL a partition each), outside any transaction.
func (r *demoRun[Tx]) status(ctx context.Context) (demoStatus, error) {
	s := demoStatus{counts: map[string]map[taskapi.State]taskapi.Summary{}}
	for _, t := range demoTopics {
		counts, err := r.db.Repo.Count(ctx, r.db.DB, taskapi.Total, taskapi.Counting{Topic: t.name}, taskapi.Unbounded)
		if err != nil {
			return s, fmt.Errorf("count the tasks of %s: %w", t.name, err)
		}
		s.counts[t.name] = counts[t.name]
		for state, sum := range counts[t.name] {
			if state == taskapi.Ready || state == taskapi.Active || state == taskapi.Expired {
				s.pending += sum.Count
			} else {
				s.settled += sum.Count
			}
		}
	}
	return s, nil
}

// await waits until the producers are done, resumes demo.paused, and waits
// until every task has settled, showing the progress as it goes. It fails
// when a producer or a consumer's loop does, when ctx ends, or when the
// tasks take longer than the timeout.
func (r *demoRun[Tx]) await(ctx context.Context, p *demoProducers) error {
	deadline := time.NewTimer(time.Until(r.times.start.Add(r.d.Spread + r.d.Timeout)))
	defer deadline.Stop()
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	producing := p.done
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo interrupted: %w", ctx.Err())
		case <-deadline.C:
			return r.late(ctx)
		case <-producing:
			producing = nil
			if p.err != nil {
				return p.err
			}
			if err := r.resume(ctx); err != nil {
				return err
			}
		case <-tick.C:
		}
		if err := r.events.died(); err != nil {
			return err
		}
		s, err := r.status(ctx)
		if err != nil {
			return err
		}
		r.show.update(r.moment(s))
		if producing == nil && s.pending == 0 {
			r.times.settled = time.Now()
			r.show.phase("every task settled after %.1fs; stopping the consumers", r.times.settled.Sub(r.times.start).Seconds())
			return nil
		}
	}
}

// resume notes that the producers are done and resumes demo.paused,
// through the first consumer: it applies the change at once, the others
// when they hear of it (a notification on PostgreSQL, else their next
// reconciliation).
func (r *demoRun[Tx]) resume(ctx context.Context) error {
	r.times.pushed = time.Now()
	pushed := r.pushed.Load()
	r.show.phase("pushed %d tasks in %.1fs", pushed, r.times.pushed.Sub(r.times.start).Seconds())
	r.times.resumed = time.Now()
	if err := r.clients[0].SetActivation(ctx, demoPaused, taskapi.Running); err != nil {
		return fmt.Errorf("resume %s: %w", demoPaused, err)
	}
	r.show.phase("resumed %s after %.1fs; its %d tasks drain now", demoPaused,
		r.times.resumed.Sub(r.times.start).Seconds(), r.plan[demoPaused])
	return nil
}

// moment is the progress that s shows.
func (r *demoRun[Tx]) moment(s demoStatus) demoMoment {
	return demoMoment{
		total:   int64(r.plan.total()),
		pushed:  r.pushed.Load(),
		settled: s.settled,
		waiting: s.counts[demoPaused][taskapi.Ready].Count,
		paused:  r.times.resumed.IsZero(),
		elapsed: time.Since(r.times.start),
	}
}

// late is the error of tasks that did not settle in time: it names what
// is still to do, topic by topic.
func (r *demoRun[Tx]) late(ctx context.Context) error {
	s, err := r.status(ctx)
	if err != nil {
		return fmt.Errorf("the demo's tasks did not settle within %v of the producers' %v: %w", r.d.Timeout, r.d.Spread, err)
	}
	var open []string
	for _, t := range demoTopics {
		for _, state := range []taskapi.State{taskapi.Ready, taskapi.Active, taskapi.Expired} {
			if n := s.counts[t.name][state].Count; n > 0 {
				open = append(open, fmt.Sprintf("%s %d %s", t.name, n, state))
			}
		}
	}
	if len(open) == 0 {
		open = append(open, "none")
	}
	if len(open) == 0 {
		open = append(open, "none")
	}
	return fmt.Errorf("the demo's tasks did not settle within %v of the producers' %v (%d pushed of %d; still open: %s): try a longer --timeout or fewer --tasks",
		r.d.Timeout, r.d.Spread, r.pushed.Load(), r.plan.total(), strings.Join(open, ", "))
}
