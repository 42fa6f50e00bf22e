package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// The cases of this file are the edges at which the runtime used to break
// its promises (issue 21), on every backend; edges_term_test.go has those
// that need a connection cut.

func edgeCases[Tx any](all map[string]suiteCase[Tx]) {
	all["AStoppingClientKeepsItsOwnerAliveUntilItsLastBatchIsSettled"] = stoppingKeepsOwnerAlive[Tx]
	all["ACompletionThatFindsEveryTaskTakenIsAnError"] = completionOfTakenTasks[Tx]
	all["ALoopWaitingForASlotClaimsNothingOnceDraining"] = drainingWhileWaitingForASlot[Tx]
	all["APollUnderWayWhenDrainingBeginsRunsNothing"] = pollUnderWay[Tx](taskapi.Draining)
	all["APollUnderWayWhenPausedRunsNothing"] = pollUnderWay[Tx](taskapi.Paused)
	all["AStopGivesBackTasksWhoseCompletionFunctionNeverReturns"] = stopPastAStuckCompletion[Tx]
}

// owners records which owners wrote a result for each task: a settlement
// that returned nil wrote it.
type owners struct {
	mu      sync.Mutex
	written map[int64][]string
}

func (o *owners) add(owner string, tasks []taskapi.Task) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.written == nil {
		o.written = map[int64][]string{}
	}
	for _, task := range tasks {
		o.written[task.Sequence] = append(o.written[task.Sequence], owner)
	}
}

// of returns the owners that wrote a result for task.
func (o *owners) of(task taskapi.Task) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.written[task.Sequence])
}

// completing returns a handler that completes every task Success and
// records it as owner's when the completion returned nil.
func completing(o *owners, owner string) taskproc.Handler {
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		err := b.Complete(every(b, taskapi.Success))
		if err == nil {
			o.add(owner, b.Tasks())
		}
		return err
	})
}

// stoppingKeepsOwnerAlive proves that stopping never lets a task run twice.
// A Client is started as README's service does, with a context that ends on
// a signal, and that context ends while its handler holds a batch for
// longer than the expiry; a second Client, another owner with the same
// short expiry and WithRevival, sweeps meanwhile. The first Client's
// heartbeat must go on until its last batch is settled, so that the second
// never expires and runs those tasks again: the held batch completes, Stop
// returns nil, and every task has one result, written once.
func stoppingKeepsOwnerAlive[Tx any](t *testing.T, e *env[Tx]) {
	const heartbeat, expiry = 100 * time.Millisecond, time.Second
	tasks := e.push("a", "b", "c", "d")
	opts := []taskproc.ClientOption{taskproc.WithHeartbeat(heartbeat), taskproc.WithExpiry(expiry), taskproc.WithPause(20 * time.Millisecond)}
	results := &owners{}
	held, finish := make(chan []taskapi.Task, 1), make(chan struct{})
	var first, finished sync.Once
	defer finished.Do(func() { close(finish) })
	complete := completing(results, "proc")
	a := e.client(e.repo, opts...)
	handle(t, a, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		first.Do(func() {
			held <- b.Tasks()
			<-finish
		})
		return complete.Handle(ctx, b)
	}), taskproc.WithSize(2))
	signalled, signal := context.WithCancel(context.WithoutCancel(e.ctx)) // signal.NotifyContext's, in a service
	defer signal()
	if err := a.Start(signalled); err != nil {
		t.Fatal(err)
	}
	mine := within(t, "A's first batch", held)
	signal()
	stopped := make(chan error, 1)
	go stopWithinCh(a.Stop, stopped) // README: Stop(30 s), here with the tests' patience
	// A's last heartbeat before the signal is older than the expiry at
	// this moment: an Expire of B after it would take A's tasks, unless
	// A's heartbeat goes on.
	past := time.Now().Add(expiry + heartbeat)

	var sweptPast atomic.Int32
	repoB := &hooked[Tx]{fullRepo: e.owner("proc-b")}
	repoB.expire = func(expire func() (int64, error)) (int64, error) {
		late := time.Now().After(past)
		n, err := expire()
		if late && err == nil {
			sweptPast.Add(1)
		}
		return n, err
	}
	events := &recorder{}
	b := e.client(repoB, append(opts, taskproc.WithRevival(), taskproc.WithObserver(events))...)
	handle(t, b, topic, completing(results, "proc-b"))
	e.start(b)
	e.eventually("two sweeps of B past A's expiry", func() bool { return sweptPast.Load() >= 2 })
	empty := len(events.of(taskproc.EventEmpty))
	e.eventually("a poll of B after them", func() bool { return len(events.of(taskproc.EventEmpty)) > empty })
	finished.Do(func() { close(finish) })
	if err := within(t, "A's Stop", stopped); err != nil {
		t.Errorf("Stop = %v, want nil: the held batch was settled", err)
	}
	e.allIn(len(tasks), taskapi.Succeeded)
	for _, task := range tasks {
		if w := results.of(task); len(w) != 1 {
			t.Errorf("task %d: results written by %v, want one", task.Sequence, w)
		}
	}
	for _, task := range mine {
		if info := e.info(task); info.Owner != "proc" {
			t.Errorf("task %d that the stopping Client held was completed by %q, want by it", task.Sequence, info.Owner)
		}
	}
	if n := len(events.of(taskproc.EventRescued)); n != 0 {
		t.Errorf("B rescued tasks %d times, want never: the stopping Client was alive", n)
	}
}

// completionOfTakenTasks proves that a Complete that writes nothing,
// because another owner took every task of its batch, returns an error
// (ErrNotActive), never nil, and changes nothing of the other owner's.
func completionOfTakenTasks[Tx any](t *testing.T, e *env[Tx]) {
	tasks := e.push("a", "b")
	thief := e.owner("thief")
	result := make(chan error, 1)
	e.start(e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		// Behind the handler's back, the tasks go back to the queue and
		// another owner takes them.
		if err := e.repo.Release(ctx, e.db, topic, b.Tasks()...); err != nil {
			return err
		}
		if taken, err := thief.Poll(ctx, e.db, topic, len(tasks)); err != nil || len(taken) != len(tasks) {
			return fmt.Errorf("the thief took %d tasks: %v", len(taken), err)
		}
		result <- b.Complete(every(b, taskapi.Success))
		return nil
	}), taskproc.WithPause(time.Hour)))
	if err := within(t, "the completion", result); !errors.Is(err, taskapi.ErrNotActive) {
		t.Errorf("Complete of a batch whose every task another owner took = %v, want ErrNotActive", err)
	}
	for _, task := range tasks {
		if info := e.info(task); info.State != taskapi.Active || info.Owner != "thief" {
			t.Errorf("task %d is %v of %q, want ACTIVE of the thief", task.Sequence, info.State, info.Owner)
		}
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	if err := thief.Complete(e.ctx, e.db, topic, completions...); err != nil {
		t.Errorf("the thief's Complete = %v", err)
	}
}

// drainingWhileWaitingForASlot proves that a loop waiting for a limiter
// slot when its topic begins draining claims nothing once it gets the
// slot: Drained becomes true while it waits, and stays true, with every
// task of the topic still Ready, once the slot was freed and gone through
// the waiting loop to the next.
func drainingWhileWaitingForASlot[Tx any](t *testing.T, e *env[Tx]) {
	e.pushTo(other, "holds the slot")
	events := &recorder{}
	limiter := taskproc.NewBoundedLimiter(1)
	held, free := make(chan struct{}), make(chan struct{})
	var freed sync.Once
	defer freed.Do(func() { close(free) })
	var seen batches
	c := e.client(e.repo, taskproc.WithLimiter(limiter), taskproc.WithObserver(events), taskproc.WithPause(20*time.Millisecond))
	handle(t, c, other, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		close(held) // the one task of the topic: one batch
		<-free
		return b.Complete(every(b, taskapi.Success))
	}))
	handle(t, c, topic, recording(&seen))
	e.start(c)
	within(t, "the batch that holds the slot", held)
	tasks := e.push(ids(3, 3)...)
	e.eventually("the loop of the topic waits for the slot", func() bool { return limiter.Waiting() == 1 })
	if err := c.SetActivation(e.ctx, topic, taskapi.Draining); err != nil {
		t.Fatal(err)
	}
	m := c.Manager(topic)
	e.eventually("drained", m.Drained)
	empty := emptyPolls(events, other)
	freed.Do(func() { close(free) })
	// The limiter serves its waiters in turn: once the other topic's loop
	// polls again, the slot has been through the draining loop.
	e.eventually("the other topic's next poll", func() bool { return emptyPolls(events, other) > empty })
	if !m.Drained() {
		t.Error("not drained any more once the slot was freed")
	}
	if n := e.count(taskapi.Ready); n != len(tasks) {
		t.Errorf("%d of %d tasks of the draining topic Ready, want all: none claimed", n, len(tasks))
	}
	if got := seen.list(); len(got) > 0 {
		t.Errorf("the draining topic's handler got batches %v, want none", got)
	}
}

// emptyPolls counts the polls of name that found nothing.
func emptyPolls(events *recorder, name string) int {
	n := 0
	for _, e := range events.of(taskproc.EventEmpty) {
		if e.Topic == name {
			n++
		}
	}
	return n
}

// pollUnderWay proves that a poll under way when the topic stops claiming
// (SetActivation to a, Draining or Paused, returned) runs nothing: the
// poll's transaction is held once it committed; meanwhile the topic is not
// Drained; let go, its batch never reaches the handler, its tasks are given
// back Ready, not counted as run, and then the topic is Drained.
func pollUnderWay[Tx any](a taskapi.Activation) suiteCase[Tx] {
	return func(t *testing.T, e *env[Tx]) {
		tasks := e.push("a", "b")
		var (
			mu     sync.Mutex // one transaction at a time: a poll is known by the transaction it ran in
			polled bool
		)
		blocked, unblock := make(chan struct{}), make(chan struct{})
		var gate, opened sync.Once
		repo := &hooked[Tx]{fullRepo: e.repo}
		repo.poll = func(poll func() ([]taskapi.Task, error)) ([]taskapi.Task, error) {
			polled = true
			return poll()
		}
		transact := func(ctx context.Context, fn func(tx Tx) error) error {
			mu.Lock()
			polled = false
			err := e.transact(ctx, fn)
			claimed := polled && err == nil
			mu.Unlock()
			if claimed {
				gate.Do(func() {
					close(blocked)
					<-unblock
				})
			}
			return err
		}
		c, err := taskproc.New(repo, transact)
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, c.Stop)
		defer opened.Do(func() { close(unblock) }) // before the Stop
		var seen batches
		handle(t, c, topic, recording(&seen))
		e.start(c)
		within(t, "the poll", blocked)
		if err := c.SetActivation(e.ctx, topic, a); err != nil {
			t.Fatal(err)
		}
		m := c.Manager(topic)
		if m.Drained() {
			t.Error("drained while a poll is under way")
		}
		opened.Do(func() { close(unblock) })
		e.allIn(len(tasks), taskapi.Ready)
		if a == taskapi.Draining {
			e.eventually("drained", m.Drained)
		}
		for _, task := range tasks {
			if info := e.info(task); info.Owner != "" || info.Descent != taskapi.Ready {
				t.Errorf("task %d given back is of %q, descent %v; want no owner, not counted as run", task.Sequence, info.Owner, info.Descent)
			}
		}
		if got := seen.list(); len(got) > 0 {
			t.Errorf("the handler got batches %v polled while the topic stopped claiming, want none", got)
		}
	}
}

// stopPastAStuckCompletion proves that Stop returns, with the tasks Ready,
// when a CompleteTx function ignores its context and blocks for ever; what
// the function returns at last is not written. On a database of one
// connection (SQLite), which the function's transaction holds, the tasks
// can go back only once it returns.
func stopPastAStuckCompletion[Tx any](t *testing.T, e *env[Tx]) {
	tasks := e.push("a")
	entered, unblock, late := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var opened sync.Once
	defer opened.Do(func() { close(unblock) })
	m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		late <- taskproc.CompleteTx(b, func(context.Context, Tx) (taskproc.Decisions, error) {
			close(entered)
			<-unblock // ignores its context
			return every(b, taskapi.Success), nil
		})
		return nil
	}), taskproc.WithGrace(10*time.Millisecond))
	e.start(m)
	within(t, "the completion function", entered)
	stopped := make(chan error, 1)
	go func() { stopped <- m.Stop(cancelled()) }()
	if err := within(t, "Stop", stopped); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop with an ended context = %v, want context.Canceled", err)
	}
	ready := func(when string) {
		t.Helper()
		for _, task := range tasks {
			if info := e.info(task); info.State != taskapi.Ready || info.Owner != "" {
				t.Errorf("task %d is %v of %q %s, want READY", task.Sequence, info.State, info.Owner, when)
			}
		}
	}
	if !e.b.single {
		ready("after Stop")
	}
	opened.Do(func() { close(unblock) })
	if err := within(t, "the stuck completion", late); err == nil {
		t.Error("the stuck completion, given up by Stop, returned nil")
	}
	ready("once the stuck completion returned")
}
