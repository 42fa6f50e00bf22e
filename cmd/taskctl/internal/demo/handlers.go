package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// demoHandler is the handler of a demo topic and the options of its own.
type demoHandler struct {
	handler taskproc.Handler
	opts    []taskproc.TopicOption
}

// handlers returns the handler of each demo topic. Every handler records
// when it starts a task, so that the summary can tell the latencies.
func (r *demoRun[Tx]) handlers() (map[string]demoHandler, error) {
	pipeline, err := r.pipeline()
	if err != nil {
		return nil, fmt.Errorf("demo pipeline: %w", err)
	}
	retry := taskproc.RetryPolicy{
		MaxAttempts: demoMaxAttempts,
		Backoff:     taskproc.ExponentialBackoff(demoBackoffBase, demoBackoffCap),
	}
	return map[string]demoHandler{
		demoOrders:   {handler: taskproc.Parallel(8, r.order)},
		demoPrices:   {handler: taskproc.Parallel(4, r.price), opts: []taskproc.TopicOption{taskproc.WithCondition(taskapi.SingularByIdentifier)}},
		demoPipeline: {handler: pipeline},
		demoRetries:  {handler: taskproc.Parallel(8, r.flaky), opts: []taskproc.TopicOption{taskproc.WithRetry(retry)}},
		demoLater:    {handler: taskproc.Sequential(r.succeed(demoLater))},
		demoPaused:   {handler: taskproc.Sequential(r.succeed(demoPaused))},
	}, nil
}

// order decides an order: most succeed, one in twenty fails, one in twenty
// waits for a person (SUSPENSION) and one in ten is a duplicate (FILTER).
func (r *demoRun[Tx]) order(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
	r.rec.started(demoOrders, task)
	in := parseDemoInput(task)
	if err := demoWork(ctx, time.Duration(in.N%3)*time.Millisecond); err != nil {
		return taskapi.Decision{}, err
	}
	switch in.N % 20 {
	case 0:
		return taskapi.Decision{}, errors.New("card declined")
	case 1:
		return taskapi.Decision{}, taskproc.EndWith(taskapi.Suspension, errors.New("address unclear: a person must look"))
	case 2, 3:
		return taskapi.Decision{}, taskproc.EndWith(taskapi.Filter, errors.New("duplicate order: nothing to do"))
	}
	return taskapi.Decision{Result: taskapi.Success, Output: fmt.Sprintf("invoiced %d.%02d", in.Amount/100, in.Amount%100)}, nil
}

// price publishes a price of the stream; one in seven is unchanged and
// filtered out.
func (r *demoRun[Tx]) price(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
	r.rec.started(demoPrices, task)
	in := parseDemoInput(task)
	if in.N%7 == 0 {
		return taskapi.Decision{}, taskproc.EndWith(taskapi.Filter, errors.New("price unchanged"))
	}
	return taskapi.Decision{Result: taskapi.Success, Output: fmt.Sprintf("published %s at %.4f", in.Pair, in.Price)}, nil
}

// flaky fails transiently as often as the task's input says, then
// succeeds, unless the attempts run out first.
func (r *demoRun[Tx]) flaky(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
	run := r.rec.started(demoRetries, task)
	if in := parseDemoInput(task); run <= in.Fails {
		return taskapi.Decision{}, taskproc.Transient(fmt.Errorf("upstream timed out on attempt %d", run))
	}
	return taskapi.Decision{Result: taskapi.Success, Output: fmt.Sprintf("succeeded on attempt %d", run)}, nil
}

// succeed returns a TaskFunc that records the start of each task of topic
// and lets it succeed.
func (r *demoRun[Tx]) succeed(topic string) taskproc.TaskFunc {
	return func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		r.rec.started(topic, task)
		return taskapi.Decision{Result: taskapi.Success, Output: "done"}, nil
	}
}

// demoWork stands for a handler's work: it waits d, or until ctx ends.
func demoWork(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
