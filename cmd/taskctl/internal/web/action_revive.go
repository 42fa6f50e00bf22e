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
	sel, err := selectFinished(ctx, s.cfg.Store, f, "revived")
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
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		var revived []taskapi.Revival
		if sel.byState {
			revived, err = ops.ReviveAll(ctx, s.cfg.Store, sel.topic, how, sel.state, sel.span)
		} else {
			revived, err = s.cfg.Store.ReviveTasks(ctx, sel.topic, how, sel.tasks())
		}
		if err != nil && len(revived) == 0 {
			return nil, err
		}
		return revivedOutcome(ctx, s.cfg.Store, sel.topic, how, revived, err)
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
	for i, r := range revived {
		if i == maxListed {
			o.Lines = append(o.Lines, fmt.Sprintf("(the first %d are listed)", maxListed))
			break
		}
		if how != taskapi.ReviveReset {
			o.Lines = append(o.Lines, fmt.Sprintf("task %d → new task %d", r.Previous.Sequence, r.Current.Sequence))
		}
		info, ok, err := store.Lookup(ctx, topic, r.Current.Sequence)
		if err != nil {
			return nil, err
		}
		if ok {
			o.Tasks = append(o.Tasks, rowsOf(topic, []taskapi.Info{info})...)
		}
	}
	return o, nil
}
