package taskproc

import (
	"context"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Flow says whether the steps that come after a step get a task.
type Flow int

// The flows of an Outcome.
const (
	// FlowDefault lets later steps have the task when this step's
	// decision is Success, and keeps it from them otherwise.
	FlowDefault Flow = iota
	// Continue lets later steps have the task whatever this step decided.
	// It applies to this step's decision only: a later step that decides
	// other than Success with the default flow still stops the task.
	Continue
	// Halt keeps the task from later steps whatever this step decided.
	Halt
)

// valid reports whether f is one of the defined flows.
func (f Flow) valid() bool { return f >= FlowDefault && f <= Halt }

// An Outcome is what a step decided for a task, and whether the steps that
// depend on it get the task. The zero Outcome is a Failure without output.
type Outcome struct {
	Decision taskapi.Decision
	Flow     Flow
}

// Outcomes holds the outcome of a step for each task it decided.
type Outcomes map[taskapi.Task]Outcome

// A BatchStep decides all the tasks it is given at once. It must decide
// each of them and no other task: a task it leaves out fails, and a
// decision for a task it was not given fails the whole batch. When it
// returns an error, or panics, every task it was given ends with Failure
// and the error's text as output, or with the result of a ResultError in
// the error's chain, and the outcomes it returned are ignored.
type BatchStep func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error)

// An EachStep decides one task. An error, or a panic, decides the task as
// for a BatchStep.
type EachStep func(ctx context.Context, task taskapi.Task, s *Supplement) (Outcome, error)

// DuplicateMode says what Deduplicate does with tasks of a batch that
// share an identifier.
type DuplicateMode int

// The duplicate modes.
const (
	// KeepNewest keeps the task with the highest sequence of each
	// identifier and ends the others with Filter and an output that names
	// the kept task.
	KeepNewest DuplicateMode = iota + 1
	// FailDuplicates ends every task of an identifier that occurs more
	// than once with Failure.
	FailDuplicates
)

// A Composite builds a Handler that decides each batch in named steps. A
// step depends on steps registered before it and runs once they have all
// finished; steps that do not depend on each other run at the same time.
// A step gets the tasks still in play: those whose outcomes from the steps
// it depends on, directly or not, let them continue (see Flow). A task's
// decision is the most severe of all the decisions steps gave it (see
// Completing.Merge); a task no step decided succeeds. The batch is then
// completed in one transaction in which the contexts (Context) run.
//
// The builder methods return c so that calls can be chained; a mistake,
// such as a name registered twice, is kept and returned by Handler. A
// Composite is not safe for concurrent use while it is built, but the
// Handler it returns is.
type Composite[Tx any] struct {
	settings compositeSettings
	steps    []*compositeStep
	index    map[string]int // step name to its position in steps
	dedupe   DuplicateMode  // zero: duplicates are left alone
	contexts []ContextFunc[Tx]
	err      error // the first mistake of the builder
}

// compositeSettings are what the CompositeOptions set.
type compositeSettings struct {
	concurrency int
}

// A CompositeOption configures a Composite.
type CompositeOption func(*compositeSettings)

// WithConcurrency sets on how many goroutines an EachStep decides the tasks
// of a batch (one by default). n below one is one.
func WithConcurrency(n int) CompositeOption {
	return func(s *compositeSettings) { s.concurrency = n }
}

// NewComposite returns a Composite without steps.
func NewComposite[Tx any](opts ...CompositeOption) *Composite[Tx] {
	c := &Composite[Tx]{settings: compositeSettings{concurrency: 1}}
	for _, opt := range opts {
		opt(&c.settings)
	}
	c.settings.concurrency = max(c.settings.concurrency, 1)
	return c
}

// Step adds a step named name that decides its tasks at once, after the
// steps named in after.
func (c *Composite[Tx]) Step(name string, step BatchStep, after ...string) *Composite[Tx] {
	if step == nil {
		return c.fail(fmt.Errorf("taskproc: step %q is nil: %w", name, taskapi.ErrInvalidArgument))
	}
	return c.add(name, batchStepRun(name, step), after)
}

// Each adds a step named name that decides its tasks one by one, on as many
// goroutines as WithConcurrency says, after the steps named in after.
func (c *Composite[Tx]) Each(name string, step EachStep, after ...string) *Composite[Tx] {
	if step == nil {
		return c.fail(fmt.Errorf("taskproc: step %q is nil: %w", name, taskapi.ErrInvalidArgument))
	}
	return c.add(name, eachStepRun(name, step, max(c.settings.concurrency, 1)), after)
}

// Subset adds a step named name, after the steps named in after, that gives
// the tasks in play that match to step and the others to fallback. Each of
// the two must decide exactly the tasks it is given. With a nil fallback the
// others pass the step undecided: it gives them no outcome, so they stay in
// play for later steps as they were.
func (c *Composite[Tx]) Subset(name string, match func(taskapi.Task) bool, step, fallback BatchStep, after ...string) *Composite[Tx] {
	if match == nil || step == nil {
		return c.fail(fmt.Errorf("taskproc: subset step %q without a match or a step: %w", name, taskapi.ErrInvalidArgument))
	}
	return c.add(name, subsetStepRun(name, match, step, fallback), after)
}

// Deduplicate makes the tasks of a batch that share an identifier settle
// before any step runs, as mode says; the steps get only the tasks left.
// The last call counts.
func (c *Composite[Tx]) Deduplicate(mode DuplicateMode) *Composite[Tx] {
	if mode != KeepNewest && mode != FailDuplicates {
		return c.fail(fmt.Errorf("taskproc: duplicate mode %d: %w", int(mode), taskapi.ErrInvalidArgument))
	}
	c.dedupe = mode
	return c
}

// Context adds fn to the contexts, which run in the order they were added
// in the transaction that completes the batch, after all the steps.
func (c *Composite[Tx]) Context(fn ContextFunc[Tx]) *Composite[Tx] {
	if fn == nil {
		return c.fail(fmt.Errorf("taskproc: nil context: %w", taskapi.ErrInvalidArgument))
	}
	c.contexts = append(c.contexts, fn)
	return c
}

// Handler returns the Handler that runs the steps for each batch and then
// completes it, with the decisions and the contexts, through CompleteTx. It
// returns the first mistake made while building c instead, an
// ErrInvalidArgument. Later changes to c do not change the Handler.
func (c *Composite[Tx]) Handler() (Handler, error) {
	if c.err != nil {
		return nil, c.err
	}
	p := &compositePlan[Tx]{
		steps:    slices.Clone(c.steps),
		dedupe:   c.dedupe,
		contexts: slices.Clone(c.contexts),
	}
	return p, nil
}

// add registers a step, checking its name and its dependencies.
func (c *Composite[Tx]) add(name string, run stepRun, after []string) *Composite[Tx] {
	if name == "" {
		return c.fail(fmt.Errorf("taskproc: a step without a name: %w", taskapi.ErrInvalidArgument))
	}
	if _, taken := c.index[name]; taken {
		return c.fail(fmt.Errorf("taskproc: step %q registered twice: %w", name, taskapi.ErrInvalidArgument))
	}
	ancestors, err := c.ancestors(name, after)
	if err != nil {
		return c.fail(err)
	}
	if c.index == nil {
		c.index = map[string]int{}
	}
	c.index[name] = len(c.steps)
	c.steps = append(c.steps, &compositeStep{name: name, run: run, ancestors: ancestors})
	return c
}

// ancestors returns the positions of the steps that a step depending on
// after depends on, directly or not, in registration order.
func (c *Composite[Tx]) ancestors(name string, after []string) ([]int, error) {
	var all []int
	for _, dep := range after {
		i, ok := c.index[dep]
		if !ok {
			return nil, fmt.Errorf("taskproc: step %q depends on %q, which is not registered before it: %w", name, dep, taskapi.ErrInvalidArgument)
		}
		all = append(all, i)
		all = append(all, c.steps[i].ancestors...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// fail keeps the first mistake of the builder.
func (c *Composite[Tx]) fail(err error) *Composite[Tx] {
	if c.err == nil {
		c.err = err
	}
	return c
}
