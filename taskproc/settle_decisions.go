package taskproc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// runCompletion calls a completion function, turning a panic into an error.
func runCompletion[Tx any](ctx context.Context, tx Tx, completion any) (d Decisions, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	switch fn := completion.(type) {
	case func(context.Context) (Decisions, error):
		return fn(ctx)
	case func(context.Context, Tx) (Decisions, error):
		return fn(ctx, tx)
	}
	return nil, fmt.Errorf("completion of type %T: %w", completion, taskapi.ErrInvalidArgument)
}

// completionsOf pairs each of tasks with its decision from d, Failure for
// a task without one. The zero Decision is Failure too, and its output
// says so: a handler that forgot to return its result does not fail its
// tasks without a word. A decision for a task that is not in all, the batch,
// is an error that names it; one for a task of all that is not in tasks
// (another owner's now) is left out.
func completionsOf(all, tasks []taskapi.Task, d Decisions) ([]taskapi.Completion, error) {
	inBatch := make(map[taskapi.Task]bool, len(all))
	for _, task := range all {
		inBatch[task] = true
	}
	var unknown []int64
	for task := range d {
		if !inBatch[task] {
			unknown = append(unknown, task.Sequence)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("decisions for tasks that are not in the batch: %s", joinSequences(unknown))
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		decision, ok := d[task]
		switch {
		case !ok:
			decision = taskapi.Decision{Result: taskapi.Failure, Output: noDecision}
		case decision == taskapi.Decision{}:
			decision.Output = zeroDecision
		}
		completions[i] = taskapi.Completion{Task: task, Decision: decision}
	}
	return completions, nil
}

// decisionsOf returns the decisions of completions.
func decisionsOf(completions []taskapi.Completion) Decisions {
	d := make(Decisions, len(completions))
	for _, c := range completions {
		d[c.Task] = c.Decision
	}
	return d
}

// failures returns a Failure with cause's text for each of tasks. The text
// is made valid for an output (UTF-8 without NUL bytes), so that the
// failure of a batch is never refused for its own message.
func failures(tasks []taskapi.Task, cause error) []taskapi.Completion {
	output := strings.ReplaceAll(strings.ToValidUTF8(cause.Error(), "\uFFFD"), "\x00", "\uFFFD")
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}}
	}
	return completions
}

// noDecision is the output of a task that its completion did not decide.
const noDecision = "taskproc: no decision for the task"

// zeroDecision is the output of a task decided by the zero Decision.
const zeroDecision = "taskproc: the handler returned the zero Decision, which is FAILURE without an output; a task that succeeded needs Result: taskapi.Success"
