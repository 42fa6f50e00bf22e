package taskproc

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A Handler processes the batches of a topic. Each batch that Handle receives
// must be settled exactly once (completed, failed or released; see Batch),
// before or after Handle returns, from any goroutine. Returning an error, or
// panicking, fails the batch unless it was settled already.
//
// A Manager calls Handle on its poll loop and polls again when it returns:
// a handler that settles before returning processes one batch at a time, and
// one that hands the batch on (Buffered) lets the loop poll the next one
// meanwhile. Parallel and ParallelTx are called off the loop, which polls
// for their free workers meanwhile. ctx is the batch's context: it carries the values of the
// context the runtime was started with, and is cancelled when the runtime
// gives up on the batch (a Stop whose context ended).
type Handler interface {
	Handle(ctx context.Context, batch *Batch) error
}

// HandlerFunc is a function that is a Handler.
type HandlerFunc func(ctx context.Context, batch *Batch) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, batch *Batch) error { return f(ctx, batch) }

// Decisions holds the decision for each task of a batch.
type Decisions map[taskapi.Task]taskapi.Decision

// A TaskFunc decides one task. When it returns an error, the task ends with
// Failure and the error's text as its output, or with the result of a
// ResultError in the error's chain; a panic is such an error too.
type TaskFunc func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error)

// ResultError is an error that ends its task with a result other than
// Failure: a TaskFunc or a step that returns it decides the task with Result
// and the error's text as output. An undefined Result decides it Failure.
type ResultError struct {
	Result taskapi.Result
	Err    error
}

// EndWith returns err as a ResultError of result: a TaskFunc or a step that
// returns it ends its task with result, its text the output.
func EndWith(result taskapi.Result, err error) error {
	return &ResultError{Result: result, Err: err}
}

// Error returns the text of Err.
func (e *ResultError) Error() string {
	if e.Err == nil {
		return e.Result.String()
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *ResultError) Unwrap() error { return e.Err }

// decisionOf turns what a TaskFunc or a step returned into a decision.
func decisionOf(d taskapi.Decision, err error) taskapi.Decision {
	if err == nil {
		return d
	}
	var re *ResultError
	if errors.As(err, &re) && re.Result.Valid() { // an undefined result fails the task
		return taskapi.Decision{Result: re.Result, Output: err.Error()}
	}
	return taskapi.Decision{Result: taskapi.Failure, Output: err.Error()}
}

// decide calls fn for task, turning a panic into an error.
func decide(ctx context.Context, fn TaskFunc, task taskapi.Task) (d taskapi.Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn(ctx, task)
}

// panicError turns a recovered panic into an error.
func panicError(p any) error {
	if err, ok := p.(error); ok {
		return fmt.Errorf("panic: %w", err)
	}
	return fmt.Errorf("panic: %v", p)
}
