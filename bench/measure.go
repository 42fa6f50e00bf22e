package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// result is one measured phase of one side.
type result struct {
	tasks   int // handled in the whole phase: what its cost is divided by
	elapsed time.Duration
	cost    cost
	note    string // e.g. why the phase was cut short
	start   *latencies
	done    *latencies
	settled *settling     // of a continuous run through a runtime (taskproc, River); nil otherwise
	run     *window       // of a continuous run; nil otherwise
	stmts   *StatementRun // the statements of the phase; nil when not read
}

// window is what a continuous run measured around its window: the
// producers push for a fixed time, then the consumers work off what is
// left (the drain), so that the latencies cover every pushed task.
type window struct {
	length   time.Duration // the producers' time
	pushed   int           // tasks pushed within it
	inWindow int           // tasks completed within it
	drain    time.Duration // from the window's end to the last completion
	left     int           // tasks still not completed when the drain was cut short
}

// rate returns tasks per second: of a continuous run, the tasks completed
// within its window.
func (r result) rate() float64 {
	if r.run != nil && r.run.length > 0 {
		return float64(r.run.inWindow) / r.run.length.Seconds()
	}
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.tasks) / r.elapsed.Seconds()
}

// measure runs phase between two cost readings and times it, right after a
// checkpoint (see settle). The phase returns how many tasks it handled and a
// note.
func measure(ctx context.Context, pool *pgxpool.Pool, phase func() (int, string, error)) (result, error) {
	if err := settle(ctx, pool); err != nil {
		return result{}, err
	}
	meter, err := startCost(ctx, pool)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	tasks, note, err := phase()
	elapsed := time.Since(began)
	if err != nil {
		return result{}, err
	}
	c, err := meter.stop(ctx)
	if err != nil {
		return result{}, err
	}
	return result{tasks: tasks, elapsed: elapsed, cost: c, note: note}, nil
}

// commits maps the stamp of a push in a continuous run (the push time its
// tasks carry, unix nanoseconds) to when the push returned, committed.
var commits sync.Map

// noteCommit records that the push stamped pushed has committed.
func noteCommit(pushed int64) { commits.Store(pushed, time.Now()) }

// latencies collects durations from many goroutines: from the push (the
// moment the producer called it) and, where the push's commit is known,
// from its commit.
type latencies struct {
	mu         sync.Mutex
	d          []time.Duration
	fromCommit []time.Duration
	early      []int64 // pushes whose task started before their commit was noted
}

// since records the time from pushed (unix nanoseconds) to now, and from
// the push's commit to now. A consumer may start a task before its
// producer hears that the push committed (the notification and the poll
// can beat the commit's reply): such a task counts as 0 once resolve finds
// its commit, rather than being left out, which would flatter the side
// whose consumers are quickest.
func (l *latencies) since(pushed int64, now time.Time) {
	at, committed := commits.Load(pushed)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, now.Sub(time.Unix(0, pushed)))
	if committed {
		l.fromCommit = append(l.fromCommit, max(now.Sub(at.(time.Time)), 0))
	} else {
		l.early = append(l.early, pushed)
	}
}

// resolve counts as 0 every early task whose push has committed since; a
// task whose push never reported its commit (it failed) stays out. Call it
// once the producers are done, before the next run clears commits.
func (l *latencies) resolve() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pushed := range l.early {
		if _, ok := commits.Load(pushed); ok {
			l.fromCommit = append(l.fromCommit, 0)
		}
	}
	l.early = nil
}

// percentile returns the p-th percentile (0 < p ≤ 100) in milliseconds,
// from the push or from its commit, or false when nothing was recorded.
func (l *latencies) percentile(p float64, fromCommit bool) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fromCommit {
		return percentileOf(l.fromCommit, p)
	}
	return percentileOf(l.d, p)
}

// percentileOf returns the p-th percentile (0 < p ≤ 100) of d in
// milliseconds, sorting d, or false when d is empty.
func percentileOf(d []time.Duration, p float64) (float64, bool) {
	if len(d) == 0 {
		return 0, false
	}
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	i := int(float64(len(d))*p/100+0.5) - 1
	i = min(max(i, 0), len(d)-1)
	return float64(d[i]) / float64(time.Millisecond), true
}

// settling collects, per task, the time from its handler's return to the
// moment the runtime reports its result committed (taskproc's
// EventCompleted, River's completion event): what a result waits to be
// durable, which a runtime that writes results in batches trades for
// fewer statements. Its methods do nothing on a nil settling.
type settling struct {
	returned sync.Map // the task's key (taskrepo's sequence, River's job ID) → when its handler returned
	mu       sync.Mutex
	d        []time.Duration
}

// handled notes that the handler of the task of key returned at.
func (s *settling) handled(key int64, at time.Time) {
	if s != nil {
		s.returned.Store(key, at)
	}
}

// committed notes that the result of the task of key was committed by at.
func (s *settling) committed(key int64, at time.Time) {
	if s == nil {
		return
	}
	if returned, ok := s.returned.LoadAndDelete(key); ok {
		s.mu.Lock()
		s.d = append(s.d, at.Sub(returned.(time.Time)))
		s.mu.Unlock()
	}
}

// percentile returns the p-th percentile in milliseconds, or false when
// nothing was recorded; a nil settling records nothing.
func (s *settling) percentile(p float64) (float64, bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentileOf(s.d, p)
}

// count returns how many durations were recorded.
func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

// closeAfter returns a channel that is closed once d has passed, and a
// function that releases the timer. Loops check it between calls instead of
// cancelling a context, since a query cancelled halfway closes its
// connection (and the server process whose CPU the cost reading counts).
func closeAfter(d time.Duration) (<-chan struct{}, func()) {
	c := make(chan struct{})
	t := time.AfterFunc(d, func() { close(c) })
	return c, func() { t.Stop() }
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// settle writes the setup's dirty pages out with a checkpoint, so that a
// measured phase does not pay for the writes of the setup or of the phase
// before: without it, the server flushes the rows loaded for the growth
// burn-down (2M of them) while the burn-down runs, and the burn-down measures
// the load as much as itself. The WAL of a phase grows a little in exchange:
// the first change of each page after a checkpoint logs the whole page.
func settle(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint before measuring (the bench's role needs pg_checkpoint or superuser): %w", err)
	}
	return nil
}
