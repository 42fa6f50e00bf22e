package taskproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// client returns a Client polling as repo's owner, stopped when the test
// ends.
func (e *env[Tx]) client(repo taskproc.Repository[Tx], opts ...taskproc.ClientOption) *taskproc.Client[Tx] {
	e.t.Helper()
	c, err := taskproc.New(repo, e.transact, opts...)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	e.t.Cleanup(func() { stopWithin(e.t, c.Stop) })
	return c
}

// handle registers h for a topic of c.
func handle[Tx any](t *testing.T, c *taskproc.Client[Tx], name string, h taskproc.Handler, opts ...taskproc.TopicOption) {
	t.Helper()
	if err := c.Handle(name, h, opts...); err != nil {
		t.Fatalf("Handle(%q): %v", name, err)
	}
}

func clientCases[Tx any](all map[string]suiteCase[Tx]) {
	all["AClientRegistersItsOwnerAndRunsEveryTopic"] = func(t *testing.T, e *env[Tx]) {
		fresh, err := e.b.newRepo("fresh") // not registered: Start does it
		if err != nil {
			t.Fatal(err)
		}
		e.pushTo(topic, ids(20, 20)...)
		e.pushTo(other, ids(20, 20)...)
		c := e.client(fresh)
		handle(t, c, topic, taskproc.Sequential(succeed))
		handle(t, c, other, taskproc.Parallel(4, succeed))
		if got := c.Topics(); fmt.Sprint(got) != fmt.Sprint([]string{topic, other}) {
			t.Errorf("Topics = %v", got)
		}
		e.start(c)
		e.allIn(20, taskapi.Succeeded)
		e.eventually("the other topic", func() bool {
			n := 0
			for _, info := range e.infos(other) {
				if info.State == taskapi.Succeeded && info.Owner == "fresh" {
					n++
				}
			}
			return n == 20
		})
	}

	all["StartGoesThroughTransactionsRefusedForAConflict"] = func(t *testing.T, e *env[Tx]) {
		// Processes that start at once contend for SQLite's write lock: a
		// begin can fail with BUSY despite busy_timeout. Start tries again.
		fresh, err := e.b.newRepo("contended")
		if err != nil {
			t.Fatal(err)
		}
		var refused atomic.Int32
		transact := func(ctx context.Context, fn func(tx Tx) error) error {
			if refused.Add(1) <= 3 {
				return fmt.Errorf("begin: %w", taskapi.ErrConflict)
			}
			return e.transact(ctx, fn)
		}
		c, err := taskproc.New(fresh, transact)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stopWithin(t, c.Stop) })
		e.push(ids(5, 5)...)
		handle(t, c, topic, taskproc.Sequential(succeed))
		e.start(c)
		e.allIn(5, taskapi.Succeeded)
		owners, err := e.repo.Owners(e.ctx, e.db, time.Hour)
		if err != nil || !slices.Contains(owners, "contended") {
			t.Errorf("Owners = %v, %v; want the Client's owner registered", owners, err)
		}
	}

	all["HandleRefusesATopicTwiceBadOptionsAndARunningClient"] = func(t *testing.T, e *env[Tx]) {
		c := e.client(e.repo)
		handle(t, c, topic, taskproc.Sequential(succeed))
		if err := c.Handle(topic, taskproc.Sequential(succeed)); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Handle of a topic twice = %v, want ErrInvalidArgument", err)
		}
		for name, opt := range map[string]taskproc.TopicOption{
			"size 0": taskproc.WithSize(0), "pause 0": taskproc.WithPause(0), "order": taskproc.WithOrder(9),
			"condition": taskproc.WithCondition(-1), "grace": taskproc.WithGrace(-time.Second),
			"pollers": taskproc.WithPollers(0),
		} {
			if err := c.Handle(other, taskproc.Sequential(succeed), opt); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Handle with %s = %v, want ErrInvalidArgument", name, err)
			}
		}
		if err := c.Handle("", taskproc.Sequential(succeed)); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Handle of an empty topic = %v, want ErrInvalidArgument", err)
		}
		e.start(c)
		if err := c.Handle(other, taskproc.Sequential(succeed)); !errors.Is(err, taskproc.ErrRunning) {
			t.Errorf("Handle while running = %v, want ErrRunning", err)
		}
		if err := c.Start(e.ctx); !errors.Is(err, taskproc.ErrRunning) {
			t.Errorf("a second Start = %v, want ErrRunning", err)
		}
	}

	all["OptionsDoWhatTheySayOrAreRefusedSayingWhatToDo"] = func(t *testing.T, e *env[Tx]) {
		// WithHeartbeat(0) alone would leave the expiry without the
		// heartbeats it needs: refused, saying to turn the expiry off too.
		if _, err := taskproc.New(e.repo, e.transact, taskproc.WithHeartbeat(0)); !errors.Is(err, taskapi.ErrInvalidArgument) ||
			!strings.Contains(err.Error(), "WithExpiry(0)") {
			t.Errorf("New with WithHeartbeat(0) = %v, want ErrInvalidArgument saying to give WithExpiry(0)", err)
		}
		quiet, err := taskproc.New(e.repo, e.transact, taskproc.WithHeartbeat(0), taskproc.WithExpiry(0))
		if err != nil {
			t.Fatalf("New with WithHeartbeat(0) and WithExpiry(0) = %v", err)
		}
		// The keeper's options belong to the Client: they are ClientOptions
		// only, so that giving one to Handle or NewManager does not compile.
		for name, opt := range map[string]taskproc.ClientOption{
			"WithHeartbeat": taskproc.WithHeartbeat(time.Second), "WithExpiry": taskproc.WithExpiry(time.Minute),
			"WithRevival": taskproc.WithRevival(), "WithOwnerPurge": taskproc.WithOwnerPurge(time.Hour),
			"WithReconcile": taskproc.WithReconcile(time.Second), "WithWakeGap": taskproc.WithWakeGap(time.Millisecond),
			"WithNotifier": taskproc.WithNotifier(nil), "WithSuccessor": taskproc.WithSuccessor[Tx](nil),
		} {
			if _, ok := opt.(taskproc.TopicOption); ok {
				t.Errorf("%s is a TopicOption: a topic could be given it", name)
			}
		}
		// A topic that was never initialized would sit idle: Start says so.
		handle(t, quiet, "never-initialized", taskproc.Sequential(succeed))
		if err := quiet.Start(e.ctx); !errors.Is(err, taskapi.ErrUnknownTopic) || !strings.Contains(err.Error(), "never-initialized") {
			t.Errorf("Start with a topic never initialized = %v, want ErrUnknownTopic naming it", err)
		}
		m, err := taskproc.NewManager[Tx](e.repo, e.transact, "never-initialized", taskproc.Sequential(succeed))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(e.ctx); !errors.Is(err, taskapi.ErrUnknownTopic) {
			t.Errorf("Manager.Start of a topic never initialized = %v, want ErrUnknownTopic", err)
		}
	}

	all["ALimiterBoundsBatchesAcrossTopicsAndChangesAtRunTime"] = func(t *testing.T, e *env[Tx]) {
		e.pushTo(topic, ids(40, 40)...)
		e.pushTo(other, ids(40, 40)...)
		limiter := taskproc.NewBoundedLimiter(1)
		var inFlight, most atomic.Int32
		gate := make(chan struct{})
		var gateOnce sync.Once
		defer gateOnce.Do(func() { close(gate) })
		gated := func() taskproc.Handler {
			return taskproc.Buffered(4, 4, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-gate
				inFlight.Add(-1)
				return b.Complete(every(b, taskapi.Success))
			}), taskproc.ReleaseOnClose)
		}
		c := e.client(e.repo, taskproc.WithLimiter(limiter), taskproc.WithSize(5))
		handle(t, c, topic, gated())
		handle(t, c, other, gated())
		e.start(c)
		e.eventually("one batch in flight", func() bool { return limiter.InUse() == 1 && limiter.Waiting() >= 1 })
		limiter.SetLimit(3)
		e.eventually("three batches in flight", func() bool { return limiter.InUse() == 3 })
		gateOnce.Do(func() { close(gate) })
		e.allIn(40, taskapi.Succeeded)
		if n := most.Load(); n > 3 {
			t.Errorf("%d batches in flight at once, want at most the limit, 3", n)
		}
	}

	all["TheObserverAndTheLogHearOfEveryBatch"] = func(t *testing.T, e *env[Tx]) {
		e.push("good", "bad")
		events := &recorder{}
		var logged bytes.Buffer
		var logMu sync.Mutex
		logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := e.client(e.repo, taskproc.WithObserver(events), taskproc.WithLogger(logger))
		handle(t, c, topic, taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if b.Tasks()[0].Identifier == "bad" {
				return errors.New("bad batch")
			}
			return b.Complete(every(b, taskapi.Success))
		}), taskproc.WithSize(1), taskproc.WithPause(time.Hour))
		e.start(c)
		e.eventually("both settled and an empty poll", func() bool {
			return len(events.of(taskproc.EventCompleted)) == 1 && len(events.of(taskproc.EventFailed)) == 1 &&
				len(events.of(taskproc.EventEmpty)) > 0
		})
		c.Resume(topic)
		e.eventually("the wake-up", func() bool { return len(events.of(taskproc.EventWoken)) > 0 })
		for _, kind := range []taskproc.EventKind{taskproc.EventPolled, taskproc.EventDispatched} {
			if n := len(events.of(kind)); n != 2 {
				t.Errorf("%d %v events, want 2", n, kind)
			}
		}
		failed := events.of(taskproc.EventFailed)[0]
		if failed.Topic != topic || failed.Err == nil || !strings.Contains(failed.Err.Error(), "bad batch") || len(failed.Tasks) != 1 {
			t.Errorf("failed event %+v, want the topic, the error and the task", failed)
		}
		logMu.Lock()
		defer logMu.Unlock()
		if !strings.Contains(logged.String(), "level=WARN msg=\"taskproc: batch failed\"") || !strings.Contains(logged.String(), "bad batch") {
			t.Errorf("log lacks the failed batch:\n%s", logged.String())
		}
	}

	all["StatsAndGaugeTellWhatWaitsAndWhatWasDone"] = func(t *testing.T, e *env[Tx]) {
		tasks := e.push(ids(10, 10)...)
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			if b.Tasks()[0].Identifier == "id-0" {
				return errors.New("the first batch fails")
			}
			return b.Complete(every(b, taskapi.Success))
		}), taskproc.WithSize(4))
		g, err := m.Gauge(e.ctx)
		if err != nil || g.Ready != 10 || !g.OldestReady.Equal(e.info(tasks[0]).Created) {
			t.Errorf("Gauge before = %+v, %v; want 10 Ready, the oldest created at %v", g, err, e.info(tasks[0]).Created)
		}
		e.start(m)
		e.eventually("every task settled", func() bool { return e.count(taskapi.Succeeded, taskapi.Failed) == 10 })
		e.eventually("the stats", func() bool { return m.Stats().Completed+m.Stats().Failed == 10 })
		st := m.Stats()
		var runs int64
		for _, n := range st.Runs.Counts {
			runs += n
		}
		if st.Polled != 3 || st.Tasks != 10 || st.Failed != 4 || st.Completed != 6 || runs != 3 || st.Runs.Sum <= 0 || st.InFlight != 0 {
			t.Errorf("Stats = %+v, want 3 batches, 10 tasks, 4 failed, 6 completed, 3 runs, none in flight", st)
		}
		if g, err := m.Gauge(e.ctx); err != nil || g.Ready != 0 || !g.OldestReady.IsZero() {
			t.Errorf("Gauge after = %+v, %v; want nothing waiting", g, err)
		}
	}

	all["TheClientSendsHeartbeats"] = func(t *testing.T, e *env[Tx]) {
		repo := &hooked[Tx]{fullRepo: e.repo}
		c := e.client(repo, taskproc.WithHeartbeat(5*time.Millisecond))
		handle(t, c, topic, taskproc.Sequential(succeed))
		e.start(c)
		e.eventually("heartbeats", func() bool { return repo.heartbeat.Load() >= 3 })
	}

	all["ThousandsOfTasksFourClientsEveryTaskOnce"] = func(t *testing.T, e *env[Tx]) {
		const n = 3000
		tasks := e.push(ids(n, 300)...)
		var (
			mu      sync.Mutex
			decided = map[int64]int{}
		)
		decide := func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			mu.Lock()
			decided[task.Sequence]++
			mu.Unlock()
			return taskapi.Decision{Result: taskapi.Result(task.Sequence % 4)}, nil
		}
		for i := range 4 {
			// Expiry off: on SQLite, whose one writer does not queue
			// its waiters fairly, a heartbeat starved under the load of
			// a busy machine would expire the tasks of a live client and
			// fence it, which is right but not what this test is about
			// (fence_test.go is).
			c := e.client(e.owner(fmt.Sprint("worker-", i)), taskproc.WithExpiry(0))
			handle(t, c, topic, taskproc.Buffered(2, 3, taskproc.Parallel(4, decide), taskproc.ReleaseOnClose),
				taskproc.WithSize(50), taskproc.WithCondition(taskapi.SingularByIdentifier))
			e.start(c)
		}
		e.eventually("every task settled", func() bool { return e.count(taskapi.Ready, taskapi.Active) == 0 })
		mu.Lock()
		defer mu.Unlock()
		for _, task := range tasks {
			if decided[task.Sequence] != 1 {
				t.Errorf("task %d decided %d times, want once", task.Sequence, decided[task.Sequence])
			}
		}
		for _, info := range e.infos(topic) {
			if want := taskapi.Result(info.Sequence % 4).State(); info.State != want {
				t.Errorf("task %d is %v, want %v", info.Sequence, info.State, want)
			}
		}
	}
}

// lockedWriter serializes writes to a buffer.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
