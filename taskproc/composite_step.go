package taskproc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A compositeStep is a registered step. It does not change once
// registered, so the batches of a Handler share it.
type compositeStep struct {
	name      string
	run       stepRun
	ancestors []int // the steps it depends on, directly or not, ascending
}

// A stepRun runs a step for the tasks in play. Its outcomes are checked
// already: one for each task that the step decides or fails. An error is
// one of the whole batch.
type stepRun func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error)

// batchStepRun runs a BatchStep and checks what it returned.
func batchStepRun(name string, step BatchStep) stepRun {
	return func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
		out, err := callBatchStep(ctx, step, tasks, s)
		return checkOutcomes(name, tasks, out, err)
	}
}

// subsetStepRun runs step for the tasks that match and fallback, if any,
// for the others, and checks what each returned for its own tasks.
func subsetStepRun(name string, match func(taskapi.Task) bool, step, fallback BatchStep) stepRun {
	matching, rest := batchStepRun(name, step), stepRun(nil)
	if fallback != nil {
		rest = batchStepRun(name, fallback)
	}
	return func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
		in, out := splitTasks(tasks, match)
		decided := Outcomes{}
		for _, part := range []struct {
			run   stepRun
			tasks []taskapi.Task
		}{{matching, in}, {rest, out}} {
			if part.run == nil || len(part.tasks) == 0 {
				continue
			}
			o, err := part.run(ctx, part.tasks, s)
			if err != nil {
				return nil, err
			}
			maps.Copy(decided, o)
		}
		return decided, nil
	}
}

// splitTasks parts tasks into those that match and the others.
func splitTasks(tasks []taskapi.Task, match func(taskapi.Task) bool) (in, out []taskapi.Task) {
	for _, task := range tasks {
		if match(task) {
			in = append(in, task)
		} else {
			out = append(out, task)
		}
	}
	return in, out
}

// eachStepRun runs an EachStep for each task on up to n goroutines. Once ctx
// ends it starts no more tasks; the batch is given up then anyway.
func eachStepRun(name string, step EachStep, n int) stepRun {
	return func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
		var (
			mu      sync.Mutex
			decided = make(Outcomes, len(tasks))
			work    = make(chan taskapi.Task)
			wg      sync.WaitGroup
		)
		for range min(n, len(tasks)) {
			wg.Go(func() {
				for task := range work {
					o := callEachStep(ctx, name, step, task, s)
					mu.Lock()
					decided[task] = o
					mu.Unlock()
				}
			})
		}
		feed(ctx, work, tasks)
		wg.Wait()
		return decided, nil
	}
}

// feed sends tasks to work until ctx ends, and closes work.
func feed(ctx context.Context, work chan<- taskapi.Task, tasks []taskapi.Task) {
	defer close(work)
	for _, task := range tasks {
		select {
		case work <- task:
		case <-ctx.Done():
			return
		}
	}
}

// callBatchStep calls step, turning a panic into an error.
func callBatchStep(ctx context.Context, step BatchStep, tasks []taskapi.Task, s *Supplement) (out Outcomes, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	// A clone, so that a step that reorders its tasks upsets no other.
	return step(ctx, slices.Clone(tasks), s)
}

// callEachStep calls step for task; an error or a panic decides the task.
func callEachStep(ctx context.Context, name string, step EachStep, task taskapi.Task, s *Supplement) (o Outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = Outcome{Decision: decisionOf(taskapi.Decision{}, panicError(p))}
		}
	}()
	o, err := step(ctx, task, s)
	if err != nil {
		return Outcome{Decision: decisionOf(taskapi.Decision{}, err)}
	}
	return checkOutcome(name, o)
}

// checkOutcomes turns what a step returned for the tasks it was given into
// one checked outcome for each of them. An error of the step fails them
// all; a task it left out fails. A decision for a task it was not given is
// an error of the batch.
func checkOutcomes(name string, given []taskapi.Task, out Outcomes, err error) (Outcomes, error) {
	checked := make(Outcomes, len(given))
	if err != nil {
		failed := Outcome{Decision: decisionOf(taskapi.Decision{}, err)}
		for _, task := range given {
			checked[task] = failed
		}
		return checked, nil
	}
	for _, task := range given {
		o, ok := out[task]
		if !ok {
			o = Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: "no decision from step " + name}}
		}
		checked[task] = checkOutcome(name, o)
	}
	if stray := strays(checked, out); len(stray) > 0 {
		return nil, fmt.Errorf("taskproc: step %q decided tasks it was not given: %s", name, joinSequences(stray))
	}
	return checked, nil
}

// strays returns the sequences of the tasks of out that are not in given,
// ascending.
func strays(given, out Outcomes) []int64 {
	var stray []int64
	for task := range out {
		if _, ok := given[task]; !ok {
			stray = append(stray, task.Sequence)
		}
	}
	slices.Sort(stray)
	return stray
}

// checkOutcome fails a task whose outcome has an undefined result or flow:
// the repository would refuse the one, and the other means nothing.
func checkOutcome(name string, o Outcome) Outcome {
	if o.Decision.Result.Valid() && o.Flow.valid() {
		return o
	}
	output := fmt.Sprintf("step %s gave an undefined outcome: result %v, flow %d", name, o.Decision.Result, int(o.Flow))
	return Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}}
}
