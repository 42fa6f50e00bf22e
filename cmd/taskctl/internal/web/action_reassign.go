package web

import (
	"context"
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// resultNames are the choices of a result.
var resultNames = []string{"SUCCESS", "FILTER", "SUSPENSION", "FAILURE"}

// planReassign sets the result of tasks in EXPIRED to SUCCEEDED: a
// selection (see selectTasks) and result.
func (s *Server) planReassign(ctx context.Context, f form, preview bool) (*plan, error) {
	sel, err := s.selectFinished(ctx, f, "reassigned", preview)
	if err != nil {
		return nil, err
	}
	p := &plan{Title: "Reassign tasks", Hidden: sel.values(), Tasks: sel.rows(), Back: topicLink(sel.topic)}
	if f.text("result") == "" {
		p.Choose = []field{{Name: "result", Label: "the new result", Options: resultNames,
			Help: "each task goes to the state of this result: SUCCEEDED, FILTERED, SUSPENDED or FAILED"}}
		return p, nil
	}
	to, err := taskapi.ParseResult(f.text("result"))
	if err != nil {
		return nil, badRequest("result %q: give SUCCESS, FILTER, SUSPENSION or FAILURE", f.text("result"))
	}
	p.Hidden.Set("result", to.String())
	if preview {
		e, err := s.estimateSelection(ctx, sel)
		if err != nil {
			return nil, err
		}
		p.None = e.none() || sel.byState && sel.state == to.State()
		p.Lines = append([]string{sel.describe() + ":", fmt.Sprintf("%s would be set to %s (result %s).", e.tasks(), to.State(), to)},
			e.note("after the change")...)
		p.note(sel, e, "change")
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		if sel.byState {
			n, err := s.cfg.Store.ReassignCompletedBy(ctx, sel.topic, sel.state, to, sel.span, sel.bound.at)
			if err != nil {
				return nil, err
			}
			return &outcome{Title: "Reassigned", Back: p.Back, Changed: n,
				Lines: []string{fmt.Sprintf("set %s of %q to %s.", tasksWord(n), sel.topic, to.State())}}, nil
		}
		return s.reassignChosen(ctx, sel, to)
	}
	return p, nil
}

// reassignChosen sets the chosen tasks of sel to the state of to, in one
// call, and lists them as they are after it (read back).
func (s *Server) reassignChosen(ctx context.Context, sel selection, to taskapi.Result) (*outcome, error) {
	assignments := make([]taskapi.Assignment, len(sel.infos))
	for i, info := range sel.infos {
		assignments[i] = taskapi.Assignment{Task: info.Task, Result: to}
	}
	if len(assignments) > 0 {
		if err := s.cfg.Store.Reassign(ctx, sel.topic, assignments); err != nil {
			return nil, err
		}
	}
	o := &outcome{Title: "Reassigned", Back: topicLink(sel.topic), Changed: int64(len(sel.infos)),
		Lines: append([]string{fmt.Sprintf("set %s of %q to %s.", tasksWord(int64(len(sel.infos))), sel.topic, to.State())}, sel.skippedLines()...)}
	seqs := make([]int64, len(sel.infos))
	for i, info := range sel.infos {
		seqs[i] = info.Sequence
	}
	var err error
	o.Tasks, err = readRows(ctx, s.cfg.Store, sel.topic, seqs)
	return o, err
}
