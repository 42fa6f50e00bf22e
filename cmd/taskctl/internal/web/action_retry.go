package web

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// planRetry defers failed tasks: it revives tasks named by sequence (a
// group of the failures page) in place, READY with their sequences, and
// holds them back until (a time) or for (a duration from now), so that
// they run again once what failed them is mended. A task that is not in
// EXPIRED to SUCCEEDED when it runs makes the revival fail and change
// nothing; a task a consumer claims between the revival and the deferral
// (each a transaction) runs at once, and the result page says so.
func (s *Server) planRetry(ctx context.Context, f form, preview bool) (*plan, error) {
	if !choosesTasks(f) {
		return nil, badRequest("say which tasks: a group of the failures page names them by sequence (seq)")
	}
	sel, err := s.selectFinished(ctx, f, "deferred here", preview)
	if err != nil {
		return nil, err
	}
	in, err := sameStates(f, sel)
	if err != nil {
		return nil, err
	}
	p := &plan{Title: "Defer failed tasks", Hidden: sel.values(), Tasks: sel.rows(), Back: "/failures"}
	p.Hidden["in"] = stateNames(in)
	until, after := f.text("until"), f.text("for")
	if until == "" && after == "" {
		p.Choose = []field{
			{Name: "for", Label: "for how long", Help: "a duration from now: 30m, 2h"},
			{Name: "until", Label: "or until", Help: "a time (2026-11-25T06:00:00Z, UTC unless it says)"},
		}
		return p, nil
	}
	at, err := ops.DeferUntil("until", until, "for", after, time.Now())
	if err != nil {
		return nil, err
	}
	if at.IsZero() {
		return nil, badRequest("until now: to run them at once, revive them instead")
	}
	p.Hidden.Set("until", at.UTC().Format(time.RFC3339Nano))
	p.Lines = []string{sel.describe() + ":", fmt.Sprintf("%s would be made READY again in place (reset) and not polled before %s.",
		tasksWord(int64(len(sel.infos))), stamp(at))}
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.retry(ctx, sel, at)
	}
	return p, nil
}

// sameStates returns the states the tasks of sel must be in: those of in
// (repeated), sent back by the confirmation, else those they are in now;
// a task in another state (finished again, or revived, since the
// confirmation) is a conflict that changes nothing.
func sameStates(f form, sel selection) ([]taskapi.State, error) {
	in, err := confirmedStates(f, sel)
	if err != nil {
		return nil, err
	}
	return in, sel.mustBe(func(st taskapi.State) bool { return slices.Contains(in, st) },
		"the tasks changed since they were confirmed as "+stateList(in))
}

// retry revives the tasks of sel in place and defers them until at; the
// tasks skipped as no longer confirmed (selectBound) are named.
func (s *Server) retry(ctx context.Context, sel selection, at time.Time) (*outcome, error) {
	var revived []taskapi.Revival
	var err error
	if len(sel.infos) > 0 {
		if revived, err = s.cfg.Store.ReviveTasks(ctx, sel.topic, taskapi.ReviveReset, sel.tasks()); err != nil {
			return nil, err
		}
	}
	tasks := make([]taskapi.Task, len(revived))
	for i, r := range revived {
		tasks[i] = r.Current
	}
	deferred, err := ops.DeferReady(ctx, s.cfg.Store, sel.topic, at, tasks)
	o := &outcome{Title: "Deferred", Back: "/failures", Changed: int64(len(revived)), Lines: []string{
		fmt.Sprintf("revived %s of %q in place; %s not polled before %s.", tasksWord(int64(len(revived))), sel.topic,
			tasksWord(int64(deferred)), stamp(at))}}
	if early := len(tasks) - deferred; early > 0 && err == nil {
		o.Lines = append(o.Lines, fmt.Sprintf("%s were claimed by a consumer before they could be deferred: they run now.", tasksWord(int64(early))))
	}
	if err != nil {
		o.Lines = append(o.Lines, fmt.Sprintf("the deferral stopped: %v; the tasks revived are READY.", err))
	}
	o.Lines = append(o.Lines, sel.skippedLines()...)
	return o, nil
}

// confirmedStates returns the states named by in (repeated), sent back by
// a confirmation, else those the tasks of sel are in now.
func confirmedStates(f form, sel selection) ([]taskapi.State, error) {
	in, err := f.states("in")
	if err != nil || len(in) > 0 {
		return in, err
	}
	for _, info := range sel.infos {
		in = append(in, info.State)
	}
	slices.Sort(in)
	return slices.Compact(in), nil
}
