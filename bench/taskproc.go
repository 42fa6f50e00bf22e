package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// procConfig is how the bench runs taskrepo's consumer runtime, taskproc.
type procConfig struct {
	clients  int           // Clients, each its own owner, as separate processes would be
	size     int           // tasks per poll
	buffer   int           // batches a Buffered handler holds
	workers  int           // workers of a Buffered handler; 0: the handler runs on the poll loop
	parallel int           // goroutines of a Parallel handler; 0: Sequential
	pollers  int           // poll loops of each Client's Manager
	settle   time.Duration // WithSettleWindow; 0: none
}

// String describes the configuration for the notes.
func (c procConfig) String() string {
	handler := "Sequential"
	if c.parallel > 0 {
		handler = fmt.Sprintf("Parallel(%d)", c.parallel)
	}
	if c.workers > 0 {
		handler = fmt.Sprintf("Buffered(%d batches, %d workers, %s)", c.buffer, c.workers, handler)
	}
	clients := "1 Client"
	if c.clients > 1 {
		clients = fmt.Sprintf("%d Clients, each its own owner,", c.clients)
	}
	window := ""
	if c.settle > 0 {
		window = fmt.Sprintf(", WithSettleWindow(%s)", c.settle)
	}
	return fmt.Sprintf("%s WithSize(%d), WithPollers(%d), %s, WithPause(%s), WithNotifier(taskpg.NewNotifier)%s",
		clients, c.size, c.pollers, handler, procPause, window)
}

// short names c in a figure: its Clients and poll size.
func (c procConfig) short() string {
	clients := "Clients"
	if c.clients == 1 {
		clients = "Client"
	}
	return fmt.Sprintf("%d %s (b%d, %d pollers)", c.clients, clients, c.size, c.pollers)
}

// flag writes c as --taskproc reads it.
func (c procConfig) flag() string {
	return fmt.Sprintf("clients=%d,size=%d,buffer=%d,workers=%d,parallel=%d,pollers=%d",
		c.clients, c.size, c.buffer, c.workers, c.parallel, c.pollers)
}

// parseProcConfig reads "clients=1,size=100,buffer=4,workers=4,parallel=0,pollers=1"
// over c; the fields left out keep c's values.
func parseProcConfig(text string, c procConfig) (procConfig, error) {
	fields := map[string]*int{"clients": &c.clients, "size": &c.size, "buffer": &c.buffer, "workers": &c.workers,
		"parallel": &c.parallel, "pollers": &c.pollers}
	for _, part := range strings.Split(text, ",") {
		name, number, ok := strings.Cut(strings.TrimSpace(part), "=")
		field, known := fields[name]
		n, err := strconv.Atoi(number)
		if !ok || !known || err != nil || n < 0 {
			return c, fmt.Errorf("--taskproc: %q is not one of clients=N, size=N, buffer=N, workers=N, parallel=N, pollers=N", part)
		}
		*field = n
	}
	if c.clients < 1 || c.size < 1 || c.pollers < 1 {
		return c, errors.New("--taskproc: clients, size and pollers must be at least 1")
	}
	return c, nil
}

// procPause is the pause of taskproc's poll loops. Each Client hears the
// pushes through a taskpg.Notifier, which wakes its loop at once; the pause
// is only the fallback for a wake-up that was lost, so it can be long, and
// an idle Client costs the server next to nothing.
const procPause = 5 * time.Second

// procRun is the taskproc Clients of one run and what they were heard to do.
type procRun struct {
	clients []*taskproc.Client[taskpg.DB]
	heard   *procObserver
}

// newProcRun makes cfg's Clients for the topic. The run ends once goal tasks
// are completed (0: never); start and done record the latencies of the tasks
// while the observer records, settled their handlers' returns and their
// completions (nil: not recorded).
func newProcRun(pool *pgxpool.Pool, cfg procConfig, goal int, start, done *latencies, settled *settling) (*procRun, error) {
	heard := &procObserver{goal: int64(goal), reached: make(chan struct{}), done: done, settled: settled}
	p := &procRun{heard: heard}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for i := range cfg.clients {
		repo, err := taskpg.New(fmt.Sprintf("bench-taskproc-%d", i), repoOptions...)
		if err != nil {
			return nil, err
		}
		// A Notifier per Client: each stands for a process of its own.
		client, err := taskproc.New(repo, taskpg.Transact(pool),
			taskproc.WithSize(cfg.size), taskproc.WithPollers(cfg.pollers), taskproc.WithPause(procPause), taskproc.WithSettleWindow(cfg.settle),
			taskproc.WithNotifier(taskpg.NewNotifier(pool)), taskproc.WithObserver(heard), taskproc.WithLogger(logger))
		if err != nil {
			return nil, err
		}
		if err := client.Handle(topic, procHandler(cfg, heard, start)); err != nil {
			return nil, err
		}
		p.clients = append(p.clients, client)
	}
	return p, nil
}

// procHandler returns the handler of cfg: it succeeds every task, noting
// when it started while heard records.
func procHandler(cfg procConfig, heard *procObserver, start *latencies) taskproc.Handler {
	succeed := func(_ context.Context, t taskapi.Task) (taskapi.Decision, error) {
		if start != nil && heard.recording.Load() {
			if pushed, err := strconv.ParseInt(t.Input, 10, 64); err == nil {
				start.since(pushed, time.Now())
			}
		}
		heard.settled.handled(t.Sequence, time.Now())
		return taskapi.Decision{Result: taskapi.Success}, nil
	}
	h := taskproc.Sequential(succeed)
	if cfg.parallel > 0 {
		h = taskproc.Parallel(cfg.parallel, succeed)
	}
	if cfg.workers > 0 {
		return taskproc.Buffered(cfg.buffer, cfg.workers, h, taskproc.ReleaseOnClose)
	}
	return h
}

// start starts every Client.
func (p *procRun) start(ctx context.Context) error {
	for _, c := range p.clients {
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stop stops every Client, giving the batches in flight 10 seconds.
func (p *procRun) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, c := range p.clients {
		errs = append(errs, c.Stop(ctx))
	}
	return errors.Join(errs...)
}

// burn starts the Clients on a full queue and waits until the goal is
// completed or timeout passes; it returns how many tasks were completed.
// The caller stops the Clients, once the clock has stopped.
func (p *procRun) burn(ctx context.Context, timeout time.Duration) (int, string, error) {
	over, release := closeAfter(timeout)
	defer release()
	if err := p.start(ctx); err != nil {
		return 0, "", err
	}
	select {
	case <-p.heard.reached:
	case <-over:
	}
	n := int(p.heard.completed.Load())
	if err := p.heard.failure(); err != nil {
		return n, "", err
	}
	if closed(over) && int64(n) < p.heard.goal {
		return n, fmt.Sprintf("cut short after %s", timeout), nil
	}
	return n, "", nil
}

// procObserver hears the runtime's events: it counts the completed tasks,
// records their push → completed latency while recording is set, and keeps
// the first failure.
type procObserver struct {
	completed atomic.Int64
	goal      int64         // reached is closed once completed gets there; 0: never
	reached   chan struct{} // closed once the goal is completed
	once      sync.Once
	recording atomic.Bool
	done      *latencies // nil: not recorded
	settled   *settling  // nil: not recorded

	mu  sync.Mutex
	err error
}

// Notify takes an event of the runtime.
func (l *procObserver) Observe(e taskproc.Event) {
	switch e.Kind {
	case taskproc.EventCompleted:
		l.complete(e.Tasks, time.Now())
	case taskproc.EventFailed, taskproc.EventPollFailed, taskproc.EventFatal, taskproc.EventReleased:
		l.fail(fmt.Errorf("taskproc: %s (%d tasks): %w", e.Kind, len(e.Tasks), e.Err))
	}
}

// complete counts tasks completed at now.
func (l *procObserver) complete(tasks []taskapi.Task, now time.Time) {
	for _, t := range tasks {
		l.settled.committed(t.Sequence, now)
	}
	if l.done != nil && l.recording.Load() {
		for _, t := range tasks {
			if pushed, err := strconv.ParseInt(t.Input, 10, 64); err == nil {
				l.done.since(pushed, now)
			}
		}
	}
	if n := l.completed.Add(int64(len(tasks))); l.goal > 0 && n >= l.goal {
		l.once.Do(func() { close(l.reached) })
	}
}

// fail keeps the first failure.
func (l *procObserver) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// failure returns the first failure heard.
func (l *procObserver) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
