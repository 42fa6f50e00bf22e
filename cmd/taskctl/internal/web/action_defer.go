package web

import (
	"context"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// planDefer holds READY tasks back: a selection (selected tasks, or every
// READY task within from and to), and until (a time, or now to release
// them) or for (a duration from now).
func (s *Server) planDefer(ctx context.Context, f form, preview bool) (*plan, error) {
	ready := taskapi.Ready
	sel, err := s.selectBound(ctx, f, &ready, preview)
	if err != nil {
		return nil, err
	}
	if sel.byState && sel.state != taskapi.Ready {
		return nil, badRequest("state %s: only READY tasks can be deferred", sel.state)
	}
	if err := sel.mustBe(func(s taskapi.State) bool { return s == taskapi.Ready }, "only READY tasks can be deferred"); err != nil {
		return nil, err
	}
	p := &plan{Title: "Defer tasks", Hidden: sel.values(), Tasks: sel.rows(), Back: topicLink(sel.topic)}
	until, after := f.text("until"), f.text("for")
	if until == "" && after == "" {
		p.Choose = []field{
			{Name: "for", Label: "for how long", Help: "a duration from now: 30m, 2h"},
			{Name: "until", Label: "or until", Help: "a time (2026-11-25T06:00:00Z, UTC unless it says), or now to make them pollable at once"},
		}
		return p, nil
	}
	at, err := ops.DeferUntil("until", until, "for", after, time.Now())
	if err != nil {
		return nil, err
	}
	when := "pollable at once"
	if !at.IsZero() {
		when = "not polled before " + stamp(at)
		p.Hidden.Set("until", at.UTC().Format(time.RFC3339Nano))
	} else {
		p.Hidden.Set("until", "now")
	}
	if preview {
		e, err := s.estimateSelection(ctx, sel)
		if err != nil {
			return nil, err
		}
		later, err := s.laterLine(ctx, sel, at, &e)
		if err != nil {
			return nil, err
		}
		p.None = e.none()
		p.Lines = append([]string{sel.describe() + ":", fmt.Sprintf("%s would be %s.", e.tasks(), when)},
			e.note("after the deferral")...)
		p.Lines = append(p.Lines, later...)
		p.note(sel, e, "deferral")
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		var d ops.Deferral
		switch {
		case sel.byState:
			d, err = ops.DeferSpan(ctx, s.cfg.Store, sel.topic, at, sel.span)
		case len(sel.infos) > 0:
			d, err = ops.DeferInfos(ctx, s.cfg.Store, sel.topic, at, sel.infos)
		}
		if err != nil {
			return nil, err
		}
		lines := []string{fmt.Sprintf("%s of %q are %s.", tasksWord(d.Deferred), sel.topic, when)}
		if d.Later > 0 {
			lines = append(lines, fmt.Sprintf("%s due later than that already were left as they are.", tasksWord(d.Later)))
		}
		return &outcome{Title: "Deferred", Back: p.Back, Changed: d.Deferred, Lines: append(lines, sel.skippedLines()...)}, nil
	}
	return p, nil
}

// laterLine says on a deferral's confirmation that the tasks due later
// than at already are left as they are, a deferral never bringing a task
// sooner, and takes them out of e, the count of those deferred: how many,
// of chosen tasks, and of a range, read within the count's budget; of a
// range too long to read within it, how many of those it read, and the
// result page counts them all. None for a deferral until now.
func (s *Server) laterLine(ctx context.Context, sel selection, at time.Time, e *estimate) ([]string, error) {
	if at.IsZero() {
		return nil, nil
	}
	var later, read int64
	all := true
	if sel.byState {
		budget, cancel := context.WithTimeout(ctx, s.cfg.CountBudget)
		defer cancel()
		var err error
		if later, read, all, err = ops.LaterIn(budget, s.cfg.Store, sel.topic, at, sel.span); err != nil && (budget.Err() == nil || ctx.Err() != nil) {
			return nil, err
		}
	} else {
		_, later = ops.Movable(sel.infos, at)
	}
	switch {
	case !all && read == 0:
		return []string{"Tasks due later than that already are left as they are (the result says how many)."}, nil
	case !all:
		return []string{fmt.Sprintf("Tasks due later than that already are left as they are: %s of the first %s READY ones read within %s (the result says how many in all).",
			num(later), tasksWord(read), dur(s.cfg.CountBudget))}, nil
	case later == 0:
		return nil, nil
	}
	if e.exact {
		e.n -= later
	}
	return []string{fmt.Sprintf("%s due later than that already would be left as they are.", tasksWord(later))}, nil
}
