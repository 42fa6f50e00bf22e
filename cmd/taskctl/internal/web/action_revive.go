package web

import (
	"context"
	"fmt"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// revivalModes describe each way to revive.
var revivalModes = map[taskapi.Revivification]string{
	taskapi.ReviveReset:     "made READY again in place, keeping their sequences",
	taskapi.ReviveAppend:    "marked RECREATED, each carried on by a new READY task",
	taskapi.ReviveSupersede: "marked RECREATED, each carried on by a new task that supersedes older READY ones",
	taskapi.ReviveReplace:   "marked RECREATED, each carried on by a new task that replaces older ones",
}

// maxListed bounds the tasks a result page lists.
const maxListed = 100

// planRevive revives tasks in EXPIRED to SUCCEEDED: a selection (see
// selectTasks) and how (reset, append, supersede, replace; default reset).
func (s *Server) planRevive(ctx context.Context, f form, preview bool) (*plan, error) {
	how := taskapi.ReviveReset
	if v := f.text("how"); v != "" {
		var err error
		if how, err = taskapi.ParseRevivification(v); err != nil {
			return nil, badRequest("how %q: give reset, append, supersede or replace", v)
		}
	}
	sel, err := s.selectFinished(ctx, f, "revived", preview)
	if err != nil {
		return nil, err
	}
	hidden := sel.values()
	hidden.Set("how", how.String())
	p := &plan{Title: "Revive tasks", Hidden: hidden, Tasks: sel.rows(), Back: topicLink(sel.topic)}
	if preview {
		e, err := s.estimateSelection(ctx, sel)
		if err != nil {
			return nil, err
		}
		p.None = e.none()
		p.Lines = append([]string{sel.describe() + ":", fmt.Sprintf("%s would be %s (%s).", e.tasks(), revivalModes[how], how)},
			e.note("after the revival")...)
		p.note(sel, e, "revival")
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		var revived []taskapi.Revival
		switch {
		case sel.byState:
			revived, err = ops.ReviveAll(ctx, s.cfg.Store, sel.topic, how, sel.state, sel.span, sel.bound.at)
		case len(sel.infos) > 0: // every chosen task in one call, one transaction
			revived, err = s.cfg.Store.ReviveTasks(ctx, sel.topic, how, sel.tasks())
		}
		if err != nil && len(revived) == 0 {
			return nil, err
		}
		o, err := revivedOutcome(ctx, s.cfg.Store, sel.topic, how, revived, err)
		if o != nil {
			o.Lines = append(o.Lines, sel.skippedLines()...)
		}
		return o, err
	}
	return p, nil
}

// revivedOutcome says what a revival changed: how many, and the first
// maxListed new tasks as they are now; err is an error that stopped a
// revival in batches after some were done.
func revivedOutcome(ctx context.Context, store Store, topic string, how taskapi.Revivification, revived []taskapi.Revival, err error) (*outcome, error) {
	o := &outcome{Title: "Revived", Back: topicLink(topic), Changed: int64(len(revived))}
	o.Lines = append(o.Lines, fmt.Sprintf("revived %s of %q (%s): %s.", tasksWord(int64(len(revived))), topic, how, revivalModes[how]))
	if err != nil {
		o.Lines = append(o.Lines, fmt.Sprintf("then it stopped: %v", err))
	}
	listed := revived[:min(len(revived), maxListed)]
	if len(listed) < len(revived) {
		o.Lines = append(o.Lines, fmt.Sprintf("(the first %d are listed)", maxListed))
	}
	seqs := make([]int64, len(listed))
	for i, r := range listed {
		if how != taskapi.ReviveReset {
			o.Lines = append(o.Lines, fmt.Sprintf("task %d → new task %d", r.Previous.Sequence, r.Current.Sequence))
		}
		seqs[i] = r.Current.Sequence
	}
	if o.Tasks, err = readRows(ctx, store, topic, seqs); err != nil {
		return nil, err
	}
	return o, nil
}
