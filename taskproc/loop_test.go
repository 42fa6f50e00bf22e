package taskproc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// hooked is a repository whose Poll, Heartbeat and Expire run hooks around
// the real ones.
type hooked[Tx any] struct {
	fullRepo[Tx]
	poll      func(poll func() ([]taskapi.Task, error)) ([]taskapi.Task, error)
	heartbeat atomic.Int64
	expire    func(expire func() (int64, error)) (int64, error)
}

func (h *hooked[Tx]) Poll(ctx context.Context, tx Tx, name string, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
	poll := func() ([]taskapi.Task, error) { return h.fullRepo.Poll(ctx, tx, name, size, opts...) }
	if h.poll == nil {
		return poll()
	}
	return h.poll(poll)
}

func (h *hooked[Tx]) Heartbeat(ctx context.Context, tx Tx) error {
	h.heartbeat.Add(1)
	return h.fullRepo.Heartbeat(ctx, tx)
}

func (h *hooked[Tx]) Expire(ctx context.Context, tx Tx, silence time.Duration) (int64, error) {
	expire := func() (int64, error) { return h.fullRepo.Expire(ctx, tx, silence) }
	if h.expire == nil {
		return expire()
	}
	return h.expire(expire)
}

// batches records the batches a handler was given.
type batches struct {
	mu  sync.Mutex
	all [][]taskapi.Task
}

func (b *batches) add(tasks []taskapi.Task) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all = append(b.all, tasks)
}

func (b *batches) list() [][]taskapi.Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]taskapi.Task(nil), b.all...)
}

// recording returns a Sequential handler that succeeds every task and
// records the batches.
func recording(seen *batches) taskproc.Handler {
	inner := taskproc.Sequential(succeed)
	return taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		seen.add(b.Tasks())
		return inner.Handle(ctx, b)
	})
}

func loopCases[Tx any](all map[string]suiteCase[Tx]) {
	all["CompletesEveryTaskExactlyOnce"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push(ids(1500, 1500)...)
		var mu sync.Mutex
		decided := map[int64]int{}
		m := e.manager(taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			decided[task.Sequence]++
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Success, Output: "done " + task.Identifier}, nil
		}), taskproc.WithSize(100))
		e.start(m)
		e.allIn(len(tasks), taskapi.Succeeded)
		mu.Lock()
		defer mu.Unlock()
		for _, task := range tasks {
			if decided[task.Sequence] != 1 {
				t.Errorf("task %d was decided %d times, want once", task.Sequence, decided[task.Sequence])
			}
		}
		if info := e.info(tasks[0]); info.Output != "done "+tasks[0].Identifier {
			t.Errorf("output = %q, want the handler's", info.Output)
		}
	}

	all["PassesItsConditionToThePoll"] = func(t *testing.T, e *env[Tx]) {
		e.push("a", "a", "b")
		var seen batches
		e.start(e.manager(recording(&seen), taskproc.WithCondition(taskapi.SingularByIdentifier), taskproc.WithSize(10)))
		e.allIn(3, taskapi.Succeeded)
		for _, batch := range seen.list() {
			n := 0
			for _, task := range batch {
				if task.Identifier == "a" {
					n++
				}
			}
			if n > 1 {
				t.Errorf("a batch of a SingularByIdentifier poll holds %d tasks of identifier a: %v", n, batch)
			}
		}
	}

	all["AWakeUpWhileBusyIsNotLost"] = func(t *testing.T, e *env[Tx]) {
		// The first poll finds nothing; after its transaction, while the
		// loop is still busy with it, a task is pushed and the loop woken:
		// its next wait must return at once, not after the pause of an hour.
		polled, resumed := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		transact := func(ctx context.Context, fn func(tx Tx) error) error {
			err := e.transact(ctx, fn)
			if calls.Add(1) == 3 { // the first two are Start's, which asks for the pool's size and reads the topics
				close(polled)
				<-resumed
			}
			return err
		}
		m, err := taskproc.NewManager[Tx](e.repo, transact, topic, taskproc.Sequential(succeed), taskproc.WithPause(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		e.start(m)
		within(t, "the first poll", polled)
		e.push("late")
		if !m.Resume() {
			t.Fatal("Resume of a running manager = false")
		}
		close(resumed)
		e.allIn(1, taskapi.Succeeded)
	}

	all["WaitsForAWakeUpAfterAnEmptyPoll"] = func(t *testing.T, e *env[Tx]) {
		events := &recorder{}
		m := e.manager(taskproc.Sequential(succeed), taskproc.WithPause(time.Hour), taskproc.WithObserver(events))
		e.start(m)
		e.eventually("an empty poll", func() bool { return len(events.of(taskproc.EventEmpty)) > 0 })
		e.push("x")
		m.Resume()
		e.allIn(1, taskapi.Succeeded)
		if len(events.of(taskproc.EventWoken)) == 0 {
			t.Error("no EventWoken after Resume")
		}
	}

	all["PollsAgainAtOnceAfterABatch"] = func(t *testing.T, e *env[Tx]) {
		e.push(ids(50, 50)...)
		e.start(e.manager(taskproc.Sequential(succeed), taskproc.WithSize(5), taskproc.WithPause(time.Hour)))
		e.allIn(50, taskapi.Succeeded) // ten batches: an hour's pause between them would not do
	}

	all["BacksOffOnPollErrorsAndKeepsRunning"] = func(t *testing.T, e *env[Tx]) {
		e.push("x")
		var failures atomic.Int32
		repo := &hooked[Tx]{fullRepo: e.repo}
		repo.poll = func(poll func() ([]taskapi.Task, error)) ([]taskapi.Task, error) {
			if failures.Add(1) <= 7 {
				return nil, errors.New("database away")
			}
			return poll()
		}
		events := &recorder{}
		m, err := taskproc.NewManager[Tx](repo, e.transact, topic, taskproc.Sequential(succeed),
			taskproc.WithPause(320*time.Millisecond), taskproc.WithObserver(events))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		e.start(m)
		e.allIn(1, taskapi.Succeeded)
		var backoffs []time.Duration
		for _, ev := range events.of(taskproc.EventPollFailed) {
			backoffs = append(backoffs, ev.Duration)
		}
		want := []time.Duration{10, 20, 40, 80, 160, 320, 320}
		if len(backoffs) != len(want) {
			t.Fatalf("backoffs %v, want %v ms", backoffs, want)
		}
		for i, d := range backoffs {
			if d != want[i]*time.Millisecond {
				t.Errorf("backoff %d = %v, want %v: growing, capped at the pause", i, d, want[i]*time.Millisecond)
			}
		}
	}

	all["APollThatCommittedButFailedStrandsNothing"] = func(t *testing.T, e *env[Tx]) {
		// The first poll commits, but its caller sees an error, as when
		// the connection breaks right after the COMMIT went out: its tasks
		// are Active under a live owner with no batch to settle them. The
		// loop must give them back before it polls again, and then run
		// each of them once.
		tasks := e.push(ids(5, 5)...)
		var calls atomic.Int32
		lost := func(ctx context.Context, fn func(tx Tx) error) error {
			err := e.transact(ctx, fn)
			if calls.Add(1) == 3 && err == nil { // the first two are Start's, which asks for the pool's size and reads the topics
				return errors.New("connection lost after COMMIT")
			}
			return err
		}
		var mu sync.Mutex
		decided := map[int64]int{}
		m, err := taskproc.NewManager[Tx](e.repo, lost, topic, taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			decided[task.Sequence]++
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithPause(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		e.start(m)
		e.allIn(len(tasks), taskapi.Succeeded)
		mu.Lock()
		defer mu.Unlock()
		for _, task := range tasks {
			if decided[task.Sequence] != 1 {
				t.Errorf("task %d was decided %d times, want once", task.Sequence, decided[task.Sequence])
			}
		}
	}

	all["LifecycleStartResumeActiveStop"] = func(t *testing.T, e *env[Tx]) {
		m := e.manager(taskproc.Sequential(succeed), taskproc.WithPause(time.Hour))
		if m.Active() || m.Resume() {
			t.Error("a manager not started is Active or takes a Resume")
		}
		e.start(m)
		if !m.Active() {
			t.Error("a started manager is not Active")
		}
		if err := m.Start(e.ctx); !errors.Is(err, taskproc.ErrRunning) {
			t.Errorf("a second Start = %v, want ErrRunning", err)
		}
		stopWithin(t, m.Stop)
		if m.Active() || m.Resume() {
			t.Error("a stopped manager is Active or takes a Resume")
		}
		stopWithin(t, m.Stop) // a second Stop does nothing
		e.push("again")
		e.start(m) // a stopped manager starts again
		e.allIn(1, taskapi.Succeeded)
	}

	all["ALoopThatDiesSaysWhy"] = func(t *testing.T, e *env[Tx]) {
		events := &recorder{}
		m := e.manager(taskproc.Sequential(succeed), taskproc.WithObserver(events),
			taskproc.WithLimiter(panicking{}))
		e.start(m)
		e.eventually("the loop dies", func() bool { return !m.Active() })
		fatal := events.of(taskproc.EventFatal)
		if len(fatal) != 1 || fatal[0].Err == nil {
			t.Fatalf("fatal events %v, want one with the reason", fatal)
		}
	}

	all["AFailedStartLeavesNothingRunning"] = func(t *testing.T, e *env[Tx]) {
		m := e.manager(failingStart{taskproc.Sequential(succeed)})
		if err := m.Start(e.ctx); err == nil {
			t.Fatal("Start with a handler that cannot start succeeded")
		}
		if m.Active() {
			t.Error("the loop runs after a failed Start")
		}
	}

	all["SetClaimingFalseClaimsNothingUntilOn"] = func(t *testing.T, e *env[Tx]) {
		e.push("x")
		var polls atomic.Int32
		repo := &hooked[Tx]{fullRepo: e.repo}
		repo.poll = func(poll func() ([]taskapi.Task, error)) ([]taskapi.Task, error) {
			polls.Add(1)
			return poll()
		}
		events := &recorder{}
		m, err := taskproc.NewManager[Tx](repo, e.transact, topic, taskproc.Sequential(succeed), taskproc.WithObserver(events))
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, m.Stop)
		m.SetClaiming(false)
		e.start(m)
		m.Resume()
		e.eventually("the woken loop", func() bool { return len(events.of(taskproc.EventWoken)) > 0 })
		if n := polls.Load(); n != 0 {
			t.Errorf("%d polls while claiming is off, want none", n)
		}
		m.SetClaiming(true)
		e.allIn(1, taskapi.Succeeded)
	}

	all["SeveralPollersPollAtOnce"] = func(t *testing.T, e *env[Tx]) {
		e.push(ids(30, 30)...)
		var (
			mu      sync.Mutex
			holding int
		)
		three := make(chan struct{})
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			mu.Lock()
			if holding++; holding == 3 {
				close(three)
			}
			mu.Unlock()
			within(t, "three batches held at once", three) // only three pollers can get here together
			return b.Complete(every(b, taskapi.Success))
		}), taskproc.WithPollers(3), taskproc.WithSize(1), taskproc.WithPause(time.Hour))
		e.start(m)
		e.allIn(30, taskapi.Succeeded)
		if !m.Resume() {
			t.Error("Resume of a manager with several pollers = false")
		}
		if err := m.Start(e.ctx); !errors.Is(err, taskproc.ErrRunning) {
			t.Errorf("a second Start = %v, want ErrRunning", err)
		}
	}

	all["ALimiterErrorIsAFailedPollAndTheLoopGoesOn"] = func(t *testing.T, e *env[Tx]) {
		// A limiter's error other than ErrQueueFull is reported as a
		// failed poll, and the loop backs off as after one, polling
		// nothing, then goes on.
		e.push("a")
		limiter := &failing{}
		limiter.fails.Store(3)
		events := &recorder{}
		e.start(e.manager(taskproc.Sequential(succeed), taskproc.WithLimiter(limiter), taskproc.WithObserver(events),
			taskproc.WithPause(50*time.Millisecond)))
		e.allIn(1, taskapi.Succeeded)
		failed := events.of(taskproc.EventPollFailed)
		if len(failed) != 3 {
			t.Fatalf("%d failed polls told, want one per failed Acquire", len(failed))
		}
		for _, ev := range failed {
			if !strings.Contains(ev.Err.Error(), "limiter backend unreachable") || ev.Duration <= 0 {
				t.Errorf("failed poll %v after %v, want the limiter's error and a backoff", ev.Err, ev.Duration)
			}
		}
	}

	all["PollsAsTheNewOwnerAfterSetRepository"] = func(t *testing.T, e *env[Tx]) {
		m := e.manager(taskproc.Sequential(succeed), taskproc.WithPause(time.Hour))
		m.SetRepository(e.owner("successor"))
		e.push("x")
		e.start(m)
		e.allIn(1, taskapi.Succeeded)
		if owner := e.infos(topic)[0].Owner; owner != "successor" {
			t.Errorf("task completed by %q, want the new owner", owner)
		}
	}
}

// panicking is a limiter that panics.
type panicking struct{}

func (panicking) Acquire(context.Context, string) (func(), error) { panic("broken limiter") }

// failingStart is a handler whose Start fails.
type failingStart struct{ taskproc.Handler }

func (failingStart) Start(context.Context) error { return errors.New("cannot start") }
func (failingStart) Stop(context.Context) error  { return nil }

// failing is a limiter whose first fails Acquires fail with an error of
// its own, and that then never waits.
type failing struct{ fails atomic.Int32 }

func (l *failing) Acquire(ctx context.Context, _ string) (func(), error) {
	if l.fails.Add(-1) >= 0 {
		return nil, errors.New("limiter backend unreachable")
	}
	return func() {}, nil
}
