package taskproc

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A TaskTxFunc decides one task inside the transaction that completes it:
// what it writes through tx commits together with the task's result, or
// not at all. An error, or a panic, rolls its writes back and decides the
// task as a TaskFunc's error does, in a transaction of its own: Transient
// retries the task (see RetryPolicy), Snooze snoozes it, a ResultError gives
// its result, any other error ends it with Failure and the error's text.
type TaskTxFunc[Tx any] func(ctx context.Context, tx Tx, task taskapi.Task) (taskapi.Decision, error)

// ParallelTx returns a Handler that decides the tasks of each batch with fn
// on up to n goroutines, as Parallel does — the tasks of one identifier one
// after the other in sequence order, while the others go on — but settles
// each task on its own, in a transaction of its own that fn runs in: each
// task's writes commit exactly once, with its result (a transaction that
// failed for the database runs fn again only once it was read back not to
// have committed), and a task's retry or failure leaves the others alone.
// The next task of an identifier starts once the one before it committed,
// also across the batches of one poll loop, which polls for the workers
// that are free rather than once a whole batch is settled (see Parallel).
// When ctx ends (a Stop that ran out of time), it starts no more tasks, and
// those it did not start go back to Ready, no attempt counted; a task whose
// fn returns the error of ctx goes back too. n below one is one. AnyOrder
// drops the order of an identifier's tasks. Tx must be the transaction
// type of the runtime, else every batch fails with an ErrInvalidArgument.
//
// Each of the n functions running at once holds a connection of the pool,
// in its transaction: a Client refuses to start when they do not fit in
// the pool beside the connections it keeps for its own work (see
// Client.Start).
func ParallelTx[Tx any](n int, fn TaskTxFunc[Tx], opts ...PerTaskOption) Handler {
	return &parallelTx[Tx]{perTask: newPerTask(n, opts), fn: fn}
}

// parallelTx is the Handler of ParallelTx.
type parallelTx[Tx any] struct {
	perTask
	fn TaskTxFunc[Tx]
}

// holds says that a batch holds a connection per function running.
func (h *parallelTx[Tx]) holds() (int, string) { return h.n, "ParallelTx" }

// Handle settles the tasks of b on up to n goroutines.
func (h *parallelTx[Tx]) Handle(ctx context.Context, b *Batch) error {
	completion := func(context.Context, Tx) (Decisions, error) { return nil, nil }
	if !b.settler.accepts(completion) {
		var tx Tx
		return fmt.Errorf("taskproc: ParallelTx over transactions of type %T for a runtime of another: %w", tx, taskapi.ErrInvalidArgument)
	}
	h.runGroups(b, func(group []taskapi.Task) bool {
		for _, task := range group {
			if ctx.Err() != nil || settleTx(ctx, b, task, h.fn) != nil {
				return false // the rest of the identifier waits: its order holds
			}
		}
		return true
	}, func([]taskapi.Task) {}) // the tasks go back to Ready with the rest
	b.rest()
	return nil
}

// settleTx settles task, a task of b, in a part of its own whose completing
// transaction runs fn. It returns an error when the task's part could not
// be settled as fn decided (the batch was given up, the task interrupted).
func settleTx[Tx any](ctx context.Context, b *Batch, task taskapi.Task, fn TaskTxFunc[Tx]) error {
	part, err := b.split(task)
	if err != nil {
		return err
	}
	ctx, done := b.taskContext(ctx, task)
	defer done()
	err = CompleteTx(part, func(_ context.Context, tx Tx) (Decisions, error) {
		// fn gets the handler's context, which also ends when the batch
		// is given up: a Stop that runs out of time interrupts it.
		d, err := decideTx(ctx, tx, fn, task)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, fmt.Errorf("%w: %w", errInterrupted, err)
			}
			return nil, err
		}
		return Decisions{task: d}, nil
	})
	if b.isCancelled(task) {
		return nil // nothing was written for it; the identifier goes on
	}
	// The batch's writes end too once its last part is settled: that is
	// no give-up, and the next task of the identifier, of a later batch,
	// may go on.
	if cause := part.revoked(); errors.Is(err, errInterrupted) || (cause != nil && !errors.Is(cause, ErrSettled)) {
		return errors.Join(err, errInterrupted)
	}
	return nil
}

// decideTx calls fn for task in tx, turning a panic into an error.
func decideTx[Tx any](ctx context.Context, tx Tx, fn TaskTxFunc[Tx], task taskapi.Task) (d taskapi.Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn(ctx, tx, task)
}
