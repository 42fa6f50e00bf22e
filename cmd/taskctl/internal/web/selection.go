package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// maxSelected bounds how many tasks one action names by sequence.
const maxSelected = 1000

// selection is the tasks an action works on: named by sequence (chosen on
// a topic's page), or every task of a state within a range of sequences.
type selection struct {
	topic   string
	infos   []taskapi.Info // the named tasks, as they were read
	state   taskapi.State
	byState bool
	span    taskapi.Range
}

// selectTasks reads a selection from f: topic, and seq (repeated), or state
// with from and to. A state is needed unless defaultState is given.
func selectTasks(ctx context.Context, store Store, f form, defaultState *taskapi.State) (selection, error) {
	var sel selection
	var err error
	if sel.topic, err = f.topic(ctx, store, "topic"); err != nil {
		return sel, err
	}
	seqs, err := f.sequences("seq")
	if err != nil {
		return sel, err
	}
	if sel.span, err = f.span(); err != nil {
		return sel, err
	}
	if sel.state, sel.byState, err = f.state("state"); err != nil {
		return sel, err
	}
	switch {
	case len(seqs) > maxSelected:
		return sel, badRequest("%d tasks selected: at most %d at a time; give a state and a range instead", len(seqs), maxSelected)
	case len(seqs) > 0 && (sel.byState || sel.span != taskapi.Unbounded):
		return sel, badRequest("give the tasks by sequence, or a state with from and to, not both")
	case len(seqs) > 0:
		sel.infos, err = ops.LookupInfos(ctx, store, sel.topic, seqs)
		return sel, err
	case !sel.byState && defaultState != nil:
		sel.state, sel.byState = *defaultState, true
	case !sel.byState:
		return sel, badRequest("say which tasks: select some on the topic's page, or give a state (with from and to)")
	}
	return sel, nil
}

// selectFinished reads a selection of tasks in EXPIRED to SUCCEEDED (see
// selectTasks), for an action (verb: "revived") that takes no others.
func selectFinished(ctx context.Context, store Store, f form, verb string) (selection, error) {
	sel, err := selectTasks(ctx, store, f, nil)
	if err != nil {
		return sel, err
	}
	if sel.byState && !sel.state.Revivable() {
		return sel, badRequest("state %s: only EXPIRED to SUCCEEDED can be %s", sel.state, verb)
	}
	return sel, sel.mustBe(taskapi.State.Revivable, "only EXPIRED to SUCCEEDED can be "+verb)
}

// values writes the selection as form values.
func (sel selection) values() url.Values {
	v := url.Values{"topic": {sel.topic}}
	if !sel.byState {
		seqs := make([]int64, len(sel.infos))
		for i, info := range sel.infos {
			seqs[i] = info.Sequence
		}
		v["seq"] = seqValues(seqs)
		return v
	}
	v.Set("state", sel.state.String())
	spanValues(v, sel.span)
	return v
}

// tasks returns the named tasks.
func (sel selection) tasks() []taskapi.Task {
	tasks := make([]taskapi.Task, len(sel.infos))
	for i, info := range sel.infos {
		tasks[i] = info.Task
	}
	return tasks
}

// rows returns the named tasks as rows of a table.
func (sel selection) rows() []taskRow {
	return rowsOf(sel.topic, sel.infos)
}

// describe says which tasks the selection holds.
func (sel selection) describe() string {
	if !sel.byState {
		return fmt.Sprintf("%s of %q, selected by sequence", tasksWord(int64(len(sel.infos))), sel.topic)
	}
	return fmt.Sprintf("every %s task of %q with %s", sel.state, sel.topic, spanText(sel.span))
}

// count counts the tasks of the state of the selection within its range
// (a count of one topic and one state, which reads every task of the topic
// in the range but for READY, which has indexes of its own).
func (sel selection) count(ctx context.Context, store Store) (int64, error) {
	counts, err := store.Count(ctx, taskapi.Total, taskapi.Counting{Topic: sel.topic, States: []taskapi.State{sel.state}}, sel.span)
	return counts[sel.topic][sel.state].Count, err
}

// estimate counts the tasks of sel within the server's budget; beyond it,
// it is a bound from the sampler's last counts (see Server.estimate).
func (s *Server) estimateSelection(ctx context.Context, sel selection) (estimate, error) {
	if !sel.byState {
		return exactly(int64(len(sel.infos))), nil
	}
	return s.estimate(ctx, sel.topic, []taskapi.State{sel.state}, sel.span, func(ctx context.Context) (int64, error) {
		return sel.count(ctx, s.cfg.Store)
	})
}

// mustBe fails with 409, naming them, when named tasks are not in one of
// the states that ok accepts; what says what the action needs.
func (sel selection) mustBe(ok func(taskapi.State) bool, what string) error {
	var wrong []string
	for _, info := range sel.infos {
		if !ok(info.State) {
			wrong = append(wrong, fmt.Sprintf("%d is %s", info.Sequence, info.State))
		}
	}
	if len(wrong) > 0 {
		return conflict("%s: task %s; nothing was changed", what, strings.Join(wrong, ", task "))
	}
	return nil
}
