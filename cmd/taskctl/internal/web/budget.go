package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A confirmation page says how many tasks its action would change. It
// counts them in the database, but within a time budget (Config's
// CountBudget): counting a whole state of a topic of a million tasks, or
// what a purge would delete, reads that part of the topic (no index holds
// tasks by state) and takes longer than a page may. Beyond the budget the
// count is stopped, and the page shows a bound from the sampler's last
// counts instead, saying so; the result page after the action reports
// exactly what changed.

// withinBudget runs count with a context that ends after budget. The
// count's statements stop then: the store has PostgreSQL stop them itself
// (a statement_timeout from the context's deadline, see taskctl's
// pgtransact.go), SQLite stops at the context's end. counted is false,
// with no error, when the budget ran out first.
func withinBudget(ctx context.Context, budget time.Duration, count func(ctx context.Context) error) (counted bool, err error) {
	limited, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err = count(limited)
	if err != nil && ctx.Err() == nil && (limited.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
		return false, nil
	}
	return err == nil, err
}

// pageShare is how long a reading of all there is may take within the
// page's read timeout: three quarters of the time left to the deadline of
// ctx, so that the page still renders in the rest; least when that is
// less, or when ctx has no deadline.
func pageShare(ctx context.Context, least time.Duration) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return max(time.Until(deadline)*3/4, least)
	}
	return least
}

// estimate is how many tasks an action would change, as its confirmation
// says: an exact count, or a bound from the sampler's last count when
// counting took longer than the budget.
type estimate struct {
	n      int64
	exact  bool
	known  bool          // a bound is known: the sampler had counted the topic
	states string        // the states the bound counts: "FAILED"
	ranged bool          // the range of sequences was fewer
	at     time.Time     // when the bound was counted
	budget time.Duration // the budget that ran out
}

// exactly is the estimate of n tasks counted.
func exactly(n int64) estimate { return estimate{n: n, exact: true} }

// estimate counts with count within the budget; beyond it, it returns a
// bound from the sampler's last counts of the tasks of topic in states
// within span.
func (s *Server) estimate(ctx context.Context, topic string, states []taskapi.State, span taskapi.Range, count func(ctx context.Context) (int64, error)) (estimate, error) {
	var n int64
	counted, err := withinBudget(ctx, s.cfg.CountBudget, func(ctx context.Context) error {
		var err error
		n, err = count(ctx)
		return err
	})
	switch {
	case err != nil:
		return estimate{}, err
	case counted:
		return exactly(n), nil
	}
	e := s.sampler.snapshot().bound(topic, states, span)
	e.budget = s.cfg.CountBudget
	return e, nil
}

// bound is the estimate of the tasks of topic in states within span from
// the last counts: how many there were in those states then (READY alone
// from the last reading, which is fresher, the others from the last count
// per state), and no more than span holds.
func (v view) bound(topic string, states []taskapi.State, span taskapi.Range) estimate {
	e := estimate{states: stateList(states), at: v.tally.at}
	if len(states) == 1 && states[0] == taskapi.Ready {
		e.n, e.known = v.ready[topic]
		e.at = v.at
	} else {
		var counts map[taskapi.State]int64
		counts, e.known = v.tally.counts[topic]
		for _, st := range states {
			e.n += counts[st]
		}
	}
	if width := span.To - max(span.From, 1) + 1; span.To != taskapi.MaxSequence && width < e.n {
		e.n, e.ranged = width, true
	}
	return e
}

// none says that nothing would change, for sure.
func (e estimate) none() bool { return e.exact && e.n == 0 }

// tasks writes how many tasks: "12 tasks", "at most 20,000 tasks".
func (e estimate) tasks() string {
	switch {
	case e.exact:
		return tasksWord(e.n)
	case e.known:
		return "at most " + tasksWord(e.n)
	}
	return "an unknown number of tasks"
}

// note explains a bound, and says when the exact number is told (after:
// "after the purge"); nothing for an exact count.
func (e estimate) note(after string) []string {
	switch {
	case e.exact:
		return nil
	case !e.known:
		return []string{fmt.Sprintf("Counting them took longer than %s, and the dashboard has not counted this topic yet; the exact number is reported %s.",
			dur(e.budget), after)}
	}
	bound := fmt.Sprintf("the dashboard's last count of this topic's %s tasks, %s", e.states, ago(e.at))
	if e.ranged {
		bound = "the sequences in the range, fewer than " + bound
	}
	return []string{fmt.Sprintf("Counting them took longer than %s, so this is a bound: %s; the exact number is reported %s.",
		dur(e.budget), bound, after)}
}
