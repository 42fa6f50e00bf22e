package taskproc

import (
	"context"
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A compositePlan is what a Composite built: the Handler's state, shared by
// all its batches and never changed.
type compositePlan[Tx any] struct {
	steps    []*compositeStep
	dedupe   DuplicateMode
	contexts []ContextFunc[Tx]
}

// holds says that a batch whose completion runs contexts holds a
// connection while they run.
func (p *compositePlan[Tx]) holds() (int, string) {
	if len(p.contexts) == 0 {
		return 0, ""
	}
	return 1, "Composite"
}

// Handle runs the steps for b and completes it with their decisions and
// the contexts. When ctx ends first it returns ctx's error and b stays
// unsettled, for the runtime to release.
func (p *compositePlan[Tx]) Handle(ctx context.Context, b *Batch) error {
	r := &compositeRun{steps: p.steps, supplement: &Supplement{}}
	r.tasks, r.settled = deduplicate(b.Tasks(), p.dedupe)
	if err := r.run(ctx); err != nil {
		return err
	}
	return CompleteTx(b, completion(b, p.contexts, r.decisions(b.Tasks()), r.supplement))
}

// A compositeRun is the state of one batch going through the steps.
type compositeRun struct {
	steps      []*compositeStep
	tasks      []taskapi.Task // the tasks the steps may get, in poll order
	settled    Decisions      // the decisions of the tasks dropped as duplicates
	outcomes   []Outcomes     // by step, once it finished
	supplement *Supplement
}

// stepDone reports that a step finished.
type stepDone struct {
	step     int
	outcomes Outcomes
	err      error
}

// run runs each step once the steps it depends on have finished, on a
// goroutine of its own, until all have finished or one failed the batch or
// ctx ended; then it waits for the steps that run. Only run's goroutine
// touches r.outcomes, so the steps need no lock to share it.
func (r *compositeRun) run(ctx context.Context) error {
	r.outcomes = make([]Outcomes, len(r.steps))
	finished := make([]bool, len(r.steps))
	started := make([]bool, len(r.steps))
	done := make(chan stepDone, len(r.steps))
	running := 0
	var failed error
	for {
		if ctx.Err() == nil && failed == nil {
			running += r.start(ctx, started, finished, done)
		}
		if running == 0 {
			break
		}
		d := <-done
		running--
		r.outcomes[d.step], finished[d.step] = d.outcomes, true
		if d.err != nil && failed == nil {
			failed = d.err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return failed
}

// start starts the steps that are ready and returns how many. A step with
// no task in play finishes at once without running. The steps are in
// registration order and depend only on earlier ones, so one pass sees the
// steps that such a skip makes ready.
func (r *compositeRun) start(ctx context.Context, started, finished []bool, done chan<- stepDone) int {
	n := 0
	for i, st := range r.steps {
		if started[i] || !allFinished(st.ancestors, finished) {
			continue
		}
		started[i] = true
		tasks := r.inPlay(st)
		if len(tasks) == 0 {
			finished[i] = true
			continue
		}
		n++
		go func() {
			out, err := r.runStep(ctx, st, tasks)
			done <- stepDone{step: i, outcomes: out, err: err}
		}()
	}
	return n
}

// allFinished reports whether the steps at positions have all finished.
func allFinished(positions []int, finished []bool) bool {
	for _, i := range positions {
		if !finished[i] {
			return false
		}
	}
	return true
}

// runStep runs st for tasks. A panic that the step's own checks did not
// catch (a Subset's match, say) fails the tasks.
func (r *compositeRun) runStep(ctx context.Context, st *compositeStep, tasks []taskapi.Task) (out Outcomes, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = checkOutcomes(st.name, tasks, nil, panicError(p))
		}
	}()
	return st.run(ctx, tasks, r.supplement)
}

// inPlay returns the tasks that st gets, in poll order: those whose
// outcomes from st's ancestors let them continue.
func (r *compositeRun) inPlay(st *compositeStep) []taskapi.Task {
	var tasks []taskapi.Task
	for _, task := range r.tasks {
		if r.continues(st, task) {
			tasks = append(tasks, task)
		}
	}
	return tasks
}

// continues reports whether task goes on to st: unless an outcome of one
// of st's ancestors stops it. A flow applies to the decision it was given
// with: a step's Continue lets its own decision, however bad, pass, but
// not a later Failure of another step with the default flow.
func (r *compositeRun) continues(st *compositeStep, task taskapi.Task) bool {
	for _, i := range st.ancestors {
		if o, ok := r.outcomes[i][task]; ok && o.stops() {
			return false
		}
	}
	return true
}

// stops reports whether o keeps its task from later steps: a Halt, or a
// decision other than Success with the default flow.
func (o Outcome) stops() bool {
	return o.Flow == Halt || (o.Flow == FlowDefault && o.Decision.Result != taskapi.Success)
}

// decisions returns the decision of each of all, the tasks of the batch:
// the merge of the outcomes of every step, in registration order, or of
// its deduplication; Success for a task that none decided.
func (r *compositeRun) decisions(all []taskapi.Task) Decisions {
	d := make(Decisions, len(all))
	for _, task := range all {
		d[task] = undecided
	}
	for task, decision := range r.settled {
		d[task] = mergeDecisions(d[task], decision)
	}
	for _, outcomes := range r.outcomes {
		for task, o := range outcomes {
			d[task] = mergeDecisions(d[task], o.Decision)
		}
	}
	return d
}

// undecided is the decision of a task before any step decided it: Success,
// which every merge leaves as the other decision.
var undecided = taskapi.Decision{Result: taskapi.Success}

// mergeDecisions returns the more severe result of a and b, with both
// outputs, a's first, joined by "; " (an empty one left out).
func mergeDecisions(a, b taskapi.Decision) taskapi.Decision {
	output := a.Output
	switch {
	case output == "":
		output = b.Output
	case b.Output != "":
		output += "; " + b.Output
	}
	return taskapi.Decision{Result: a.Result.Merge(b.Result), Output: output}
}

// deduplicate settles the tasks that share an identifier as mode says. It
// returns the tasks left, in poll order, and the decisions of the others.
// The zero mode leaves all tasks.
func deduplicate(tasks []taskapi.Task, mode DuplicateMode) ([]taskapi.Task, Decisions) {
	if mode == 0 {
		return tasks, nil
	}
	newest := map[string]taskapi.Task{}
	count := map[string]int{}
	for _, task := range tasks {
		count[task.Identifier]++
		if kept, ok := newest[task.Identifier]; !ok || task.Sequence > kept.Sequence {
			newest[task.Identifier] = task
		}
	}
	var left []taskapi.Task
	settled := Decisions{}
	for _, task := range tasks {
		kept := newest[task.Identifier]
		switch {
		case count[task.Identifier] == 1:
			left = append(left, task)
		case mode == FailDuplicates:
			settled[task] = taskapi.Decision{Result: taskapi.Failure, Output: "duplicate identifier in the batch"}
		case task == kept:
			left = append(left, task)
		default:
			settled[task] = taskapi.Decision{Result: taskapi.Filter, Output: fmt.Sprintf("duplicate of task %d", kept.Sequence)}
		}
	}
	return left, settled
}
