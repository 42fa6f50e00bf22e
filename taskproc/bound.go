package taskproc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Every statement the runtime sends of its own has a deadline, and every
// transaction of its own is bounded on the server (taskapi.Bounded): a
// connection that goes silent (packets dropped, sockets open) then neither
// holds a task of a live owner, nor blocks it for another process, past
// the expiry and a heartbeat. The bound is half the expiry:
//
//   - the runtime gives up on a statement after the bound, and reads back,
//     gives back or polls again on another connection;
//   - the server ends the silent connection's transaction, and lets go of
//     its locks, at most the bound after its last statement, so that what
//     the runtime does on another connection is not held behind it.
//
// A completion function's own run is not bounded: the transaction of
// CompleteTx and ParallelTx is bounded from the moment the function
// returns, for the runtime's statements that follow it and the COMMIT
// (see watchdog and taskapi.Bounder).

// errSilent is the cause with which the runtime gives up on a statement of
// its own that did not answer within the bound.
type errSilent time.Duration

func (e errSilent) Error() string {
	return fmt.Sprintf("taskproc: the database did not answer within %v (the runtime's bound on its statements, half the expiry)", time.Duration(e))
}

// bound returns how long a statement of the runtime may take, and its
// transactions may sit idle on the server: half the expiry, or half
// DefaultExpiry when there is none.
func (s settings) bound() time.Duration {
	if s.expiry > 0 {
		return s.expiry / 2
	}
	return DefaultExpiry / 2
}

// runner runs the runtime's own transactions, each bounded to d.
type runner[Tx any] struct {
	transact Transact[Tx]
	d        time.Duration
}

// run runs fn in a transaction bounded to the runner's bound, on the client
// and on the server, and hands fn the context its statements must use.
func (r runner[Tx]) run(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	return r.transact(ctx, func(tx Tx) error { return fn(ctx, tx) })
}

// bounded returns ctx with the runner's deadline and taskapi.Bounded mark.
func (r runner[Tx]) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(taskapi.Bounded(ctx, r.d), r.d, errSilent(r.d))
}

// A watchdog gives up on the runtime's part of a transaction that runs a
// completion function: it ends the transaction's context when a part of
// the runtime's own (taking a connection and beginning, the statements
// after the function, the COMMIT) runs longer than its bound, but never
// while the function runs.
type watchdog struct {
	d      time.Duration
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	timer  *time.Timer
}

// watch returns a context that a watchdog of bound d ends, and the
// watchdog, running: the transaction begins under it.
func watch(ctx context.Context, d time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{d: d, cancel: cancel}
	w.resume()
	return ctx, w
}

// pause stops the watchdog while the completion function runs.
func (w *watchdog) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// resume runs the watchdog for another bound.
func (w *watchdog) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = time.AfterFunc(w.d, func() { w.cancel(errSilent(w.d)) })
}

// stop stops the watchdog and lets go of its context.
func (w *watchdog) stop() {
	w.pause()
	w.cancel(nil)
}
