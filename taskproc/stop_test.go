package taskproc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// cancelled returns a context that has ended.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func stopCases[Tx any](all map[string]suiteCase[Tx]) {
	all["StopWaitsForTheBatchesInFlight"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		started, finish := make(chan struct{}), make(chan struct{})
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-finish
			return b.Complete(every(b, taskapi.Success))
		}))
		e.start(m)
		within(t, "the handler", started)
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			stopped <- m.Stop(ctx)
		}()
		e.eventually("polling stopped", func() bool { return !m.Active() })
		close(finish)
		if err := within(t, "Stop", stopped); err != nil {
			t.Errorf("Stop = %v, want nil: every batch settled", err)
		}
		e.allIn(1, taskapi.Succeeded)
	}

	all["StopThatRunsOutReleasesTheInterruptedTasks"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b")
		started := make(chan struct{})
		events := &recorder{}
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-ctx.Done() // interrupted: the runtime gave up
			return ctx.Err()
		}), taskproc.WithObserver(events), taskproc.WithGrace(patience))
		e.start(m)
		within(t, "the handler", started)
		if err := m.Stop(cancelled()); !errors.Is(err, context.Canceled) {
			t.Errorf("Stop with an ended context = %v, want context.Canceled", err)
		}
		for _, task := range tasks {
			if info := e.info(task); info.State != taskapi.Ready || info.Owner != "" || info.Descent != taskapi.Ready {
				t.Errorf("interrupted task is %v of %q (descent %v), want READY, no owner, not counted as failed", info.State, info.Owner, info.Descent)
			}
		}
		if len(events.of(taskproc.EventReleased)) != 1 || len(events.of(taskproc.EventFailed)) != 0 {
			t.Errorf("events: %d released, %d failed; want the batch released", len(events.of(taskproc.EventReleased)), len(events.of(taskproc.EventFailed)))
		}
	}

	all["AHandlerIgnoringCancellationHoldsNoSlotAndCannotSettleLate"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a")
		started, finish, late := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		limiter := taskproc.NewBoundedLimiter(1)
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-finish // ignores ctx
			late <- b.Complete(every(b, taskapi.Success))
			return nil
		}), taskproc.WithLimiter(limiter), taskproc.WithGrace(10*time.Millisecond))
		e.start(m)
		within(t, "the handler", started)
		if err := m.Stop(cancelled()); !errors.Is(err, context.Canceled) {
			t.Errorf("Stop = %v, want context.Canceled", err)
		}
		if n := limiter.InUse(); n != 0 {
			t.Errorf("%d limiter slots in use after Stop, want the batch's slot back", n)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Ready {
			t.Errorf("task is %v after Stop, want READY", info.State)
		}
		close(finish)
		if err := within(t, "the late settlement", late); !errors.Is(err, taskproc.ErrSettled) {
			t.Errorf("a settlement after the stop's grace = %v, want ErrSettled", err)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Ready {
			t.Errorf("task is %v after the refused late settlement, want READY", info.State)
		}
	}

	all["ASecondStopWaitsForTheFirst"] = func(t *testing.T, e *env[Tx]) {
		e.push("a")
		started, finish := make(chan struct{}), make(chan struct{})
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-finish
			return b.Complete(every(b, taskapi.Success))
		}))
		e.start(m)
		within(t, "the handler", started)
		stops := make(chan error, 2)
		for range 2 {
			go func() { stopWithinCh(m.Stop, stops) }()
		}
		e.eventually("polling stopped", func() bool { return !m.Active() })
		close(finish)
		for range 2 {
			if err := within(t, "a Stop", stops); err != nil {
				t.Errorf("Stop = %v", err)
			}
		}
	}

	all["EndingTheStartContextStopsPollingAndLetsBatchesFinish"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a")
		started, finish := make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.WithoutCancel(e.ctx))
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-finish
			return b.Complete(every(b, taskapi.Success))
		}))
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		within(t, "the handler", started)
		cancel()
		e.eventually("polling stopped", func() bool { return !m.Active() })
		close(finish) // the batch in flight still completes
		e.eventually("the batch completed", func() bool { return e.info(tasks[0]).State == taskapi.Succeeded })
	}

	all["AStopWithADeadlineHurriesAStopWithout"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a")
		started := make(chan struct{})
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}), taskproc.WithGrace(patience))
		e.start(m)
		within(t, "the handler", started)
		patient := make(chan error, 1)
		go func() { patient <- m.Stop(context.Background()) }()
		e.eventually("polling stopped", func() bool { return !m.Active() })
		if err := m.Stop(cancelled()); !errors.Is(err, context.Canceled) {
			t.Errorf("Stop with an ended context during another Stop = %v, want context.Canceled", err)
		}
		if err := within(t, "the Stop without a deadline", patient); err != nil {
			t.Errorf("the Stop without a deadline = %v, want nil: its own context never ended", err)
		}
		if info := e.info(tasks[0]); info.State != taskapi.Ready {
			t.Errorf("task is %v, want READY: interrupted", info.State)
		}
	}
}

// stopWithinCh stops with a generous deadline and sends the result.
func stopWithinCh(stop func(ctx context.Context) error, result chan<- error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	result <- stop(ctx)
}
