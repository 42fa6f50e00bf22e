package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// maxSelected bounds how many tasks one action names by sequence: a
// group of the failures page, what a search found (named.go writes them
// short).
const maxSelected = 10_000

// selection is the tasks an action works on: named by sequence (chosen on
// a topic's page), or every task of a state within a range of sequences.
type selection struct {
	topic   string
	infos   []taskapi.Info // the named tasks, as they were read
	state   taskapi.State
	byState bool
	span    taskapi.Range // cut at the bound, by state
	bound   bound         // what the confirmation saw, by state (bound.go)
	skipped []skipped     // named tasks no longer as confirmed, at the POST
	// A group of the failures page names its tasks with its last error
	// (errorField): those that have another last error now are strayed,
	// left out and left as they are.
	errorText string
	byError   bool
	strayed   []taskapi.Info
}

// skipped is a named task that changed state between its confirmation and
// the POST: it is left as it is.
type skipped struct {
	info taskapi.Info  // as it is now
	was  taskapi.State // as the confirmation showed it
}

// wasField carries the state of each named task as the confirmation
// showed it, in the order of the seq values.
const wasField = "was"

// selectBound reads a selection (see selectTasks) bound to what its
// confirmation saw: by state, the span is cut at the confirmation's bound
// (read now for the confirmation, preview; sent back by it for the POST);
// by sequence, the POST leaves out, as skipped, the tasks no longer in
// the state the confirmation showed.
func (s *Server) selectBound(ctx context.Context, f form, defaultState *taskapi.State, preview bool) (selection, error) {
	sel, err := selectTasks(ctx, s.cfg.Store, f, defaultState)
	switch {
	case err != nil:
		return sel, err
	case sel.byState:
		if sel.bound, err = s.confirmedBound(ctx, f, sel.topic, preview); err != nil {
			return sel, err
		}
		sel.span = sel.bound.narrow(sel.span)
	case !preview:
		err = sel.keepConfirmed(url.Values(f)[wasField])
	}
	sel.keepError()
	return sel, err
}

// keepConfirmed leaves in the selection the named tasks that are in the
// state was gives for them (the confirmation's), and moves the others to
// skipped.
func (sel *selection) keepConfirmed(was []string) error {
	states, err := parseWasValues(was, len(sel.infos))
	if err != nil {
		return err
	}
	kept := sel.infos[:0:0]
	for i, info := range sel.infos {
		if info.State == states[i] {
			kept = append(kept, info)
		} else {
			sel.skipped = append(sel.skipped, skipped{info: info, was: states[i]})
		}
	}
	sel.infos = kept
	return nil
}

// keepError leaves in a selection named with an error (a group of the
// failures page) the named tasks whose last error is still that, and
// moves the others to strayed. It comes after keepConfirmed, which pairs
// the named tasks with the states sent back, all of them.
func (sel *selection) keepError() {
	if !sel.byError {
		return
	}
	kept := sel.infos[:0:0]
	for _, info := range sel.infos {
		if lastError(info.Output) == sel.errorText {
			kept = append(kept, info)
		} else {
			sel.strayed = append(sel.strayed, info)
		}
	}
	sel.infos = kept
}

// skippedLines says which named tasks were left as they are, and why.
func (sel selection) skippedLines() []string {
	var lines []string
	for _, sk := range sel.skipped {
		lines = append(lines, fmt.Sprintf("skipped task %d: it is %s now, not %s as confirmed; it was left as it is.",
			sk.info.Sequence, sk.info.State, sk.was))
	}
	for _, info := range sel.strayed {
		lines = append(lines, fmt.Sprintf("skipped task %d: its last error is «%s» now, not the group's; it was left as it is.",
			info.Sequence, lastError(info.Output)))
	}
	return lines
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
		if text, ok := url.Values(f)[errorField]; ok {
			sel.errorText, sel.byError = text[0], true
		}
		return sel, err
	case !sel.byState && defaultState != nil:
		sel.state, sel.byState = *defaultState, true
	case !sel.byState:
		return sel, badRequest("say which tasks: select some on the topic's page, or give a state (with from and to)")
	}
	return sel, nil
}

// selectFinished reads a selection of tasks in EXPIRED to SUCCEEDED (see
// selectBound), for an action (verb: "revived") that takes no others.
func (s *Server) selectFinished(ctx context.Context, f form, verb string, preview bool) (selection, error) {
	sel, err := s.selectBound(ctx, f, nil, preview)
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
		states := make([]taskapi.State, len(sel.infos))
		for i, info := range sel.infos {
			states[i] = info.State
		}
		v["seq"], v[wasField] = seqValues(seqs), wasValues(states)
		if sel.byError {
			v.Set(errorField, sel.errorText)
		}
		return v
	}
	v.Set("state", sel.state.String())
	spanValues(v, sel.span)
	sel.bound.values(v)
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
	switch {
	case sel.byError:
		text := fmt.Sprintf("%s of %q whose last error is «%s», selected by sequence", tasksWord(int64(len(sel.infos))), sel.topic, sel.errorText)
		if n := len(sel.strayed); n > 0 {
			text += fmt.Sprintf(" (of the tasks named with them, %s with another last error now left as they are)", tasksWord(int64(n)))
		}
		return text
	case !sel.byState:
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

// readRows reads the tasks of topic with seqs as they are now, in one
// transaction, as rows in the order of seqs: a result page shows what an
// action left, not what it was given.
func readRows(ctx context.Context, store Store, topic string, seqs []int64) ([]taskRow, error) {
	found, err := store.Lookups(ctx, topic, seqs)
	if err != nil {
		return nil, err
	}
	infos := make([]taskapi.Info, 0, len(seqs))
	for _, seq := range seqs {
		if info, ok := found[seq]; ok {
			infos = append(infos, info)
		}
	}
	return rowsOf(topic, infos), nil
}
