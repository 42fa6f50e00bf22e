package taskproc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskproc"
)

// limitPatience bounds every wait of these tests. It only fails a test that
// hangs; no test depends on how long anything takes.
const limitPatience = 10 * time.Second

// result is the outcome of one Acquire run in its own goroutine.
type result struct {
	id      int
	release func()
	err     error
}

// acquireAsync runs Acquire in a new goroutine and sends its outcome to out.
func acquireAsync(ctx context.Context, l taskproc.Limiter, limitTopic string, id int, out chan<- result) {
	go func() {
		release, err := l.Acquire(ctx, limitTopic)
		out <- result{id: id, release: release, err: err}
	}()
}

func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(limitPatience):
		t.Fatal("Acquire hangs")
		return result{}
	}
}

// waitFor polls cond until it holds, failing the test if it never does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limitPatience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func patientContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limitPatience)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t *testing.T, l taskproc.Limiter, limitTopic string) func() {
	t.Helper()
	release, err := l.Acquire(patientContext(t), limitTopic)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", limitTopic, err)
	}
	return release
}

// gauge tracks how many slots are in use and the most ever in use.
type gauge struct{ cur, peak atomic.Int64 }

func (g *gauge) enter() {
	c := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if c <= p || g.peak.CompareAndSwap(p, c) {
			return
		}
	}
}

func (g *gauge) leave() { g.cur.Add(-1) }

// runAll runs f in goroutines goroutines and waits for all of them.
func runAll(t *testing.T, goroutines int, f func(g int)) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { f(g) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * limitPatience):
		t.Fatal("acquirers hang")
	}
}

// spin yields the processor k times, to let other goroutines interleave.
func spin(k int) {
	for range k {
		runtime.Gosched()
	}
}

// subject is a limiter with a single limit seen through one limitTopic, so that
// the three slot limiters can share tests.
type subject struct {
	lim      taskproc.Limiter
	inUse    func() int
	waiting  func() int
	setLimit func(n int)
}

const limitTopic = "orders"

// subjects returns constructors of every slot limiter as a subject.
func subjects() map[string]func(n int) subject {
	const queue = 1 << 20
	return map[string]func(n int) subject{
		"NewBoundedLimiter": func(n int) subject {
			l := taskproc.NewBoundedLimiter(n)
			return subject{l, l.InUse, l.Waiting, l.SetLimit}
		},
		"NewPriorityLimiter": func(n int) subject {
			l := taskproc.NewPriorityLimiter(n, nil)
			return subject{l, l.InUse, l.Waiting, l.SetLimit}
		},
		"NewTopicLimiter": func(n int) subject {
			l := taskproc.NewTopicLimiter(n, queue)
			return subject{
				lim:      l,
				inUse:    func() int { return l.InUse(limitTopic) },
				waiting:  func() int { return l.Waiting(limitTopic) },
				setLimit: func(n int) { l.SetLimits(n, queue) },
			}
		},
	}
}

func forEachSubject(t *testing.T, test func(t *testing.T, mk func(n int) subject)) {
	for name, mk := range subjects() {
		t.Run(name, func(t *testing.T) { test(t, mk) })
	}
}

// checkIdle checks that s holds and awaits nothing and that n fresh
// acquirers, each with a deadline, all get a slot without waiting.
func checkIdle(t *testing.T, s subject, n int) {
	t.Helper()
	if got := s.inUse(); got != 0 {
		t.Fatalf("InUse() = %d at rest, want 0", got)
	}
	if got := s.waiting(); got != 0 {
		t.Fatalf("Waiting() = %d at rest, want 0", got)
	}
	releases := make([]func(), n)
	for i := range releases {
		releases[i] = mustAcquire(t, s.lim, limitTopic)
	}
	if got, w := s.inUse(), s.waiting(); got != n || w != 0 {
		t.Fatalf("after %d fresh acquires: InUse() = %d, Waiting() = %d; want %d, 0", n, got, w, n)
	}
	for _, release := range releases {
		release()
	}
}

// queueWaiters starts one waiter per limitTopic, in order, each only once the
// previous one waits, so that their arrival order is known. Waiter i has
// id i.
func queueWaiters(t *testing.T, l taskproc.Limiter, waiting func() int, topics []string) <-chan result {
	t.Helper()
	served := make(chan result)
	for i, tp := range topics {
		enqueue(t, l, waiting, tp, i, served)
	}
	return served
}

// enqueue starts a waiter and returns once it waits.
func enqueue(t *testing.T, l taskproc.Limiter, waiting func() int, tp string, id int, out chan<- result) {
	t.Helper()
	want := waiting() + 1
	acquireAsync(patientContext(t), l, tp, id, out)
	waitFor(t, "waiter to queue", func() bool { return waiting() == want })
}

// serveOrder receives n served waiters one at a time, giving back each
// slot only after recording who got it, and returns their ids in order.
func serveOrder(t *testing.T, served <-chan result, n int) []int {
	t.Helper()
	var order []int
	for range n {
		r := receive(t, served)
		if r.err != nil {
			t.Fatalf("waiter %d: %v", r.id, r.err)
		}
		order = append(order, r.id)
		r.release()
	}
	return order
}

func TestLimitersNeverExceedLimit(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		const limit, goroutines, rounds = 4, 32, 300
		s := mk(limit)
		var g gauge
		var served atomic.Int64
		runAll(t, goroutines, func(int) {
			for range rounds {
				release, err := s.lim.Acquire(patientContext(t), limitTopic)
				if err != nil {
					t.Error(err)
					return
				}
				g.enter()
				spin(2)
				g.leave()
				release()
				served.Add(1)
			}
		})
		if p := g.peak.Load(); p > limit {
			t.Errorf("peak in use = %d, limit %d", p, limit)
		}
		if got := served.Load(); got != goroutines*rounds {
			t.Errorf("%d acquisitions served, want %d", got, goroutines*rounds)
		}
		checkIdle(t, s, limit)
	})
}

func TestLimitersContextDoneBeforeAcquire(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		s := mk(1)
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel2()
		for ctx, want := range map[context.Context]error{
			cancelled: context.Canceled,
			expired:   context.DeadlineExceeded,
		} {
			release, err := s.lim.Acquire(ctx, limitTopic)
			if !errors.Is(err, want) || release != nil {
				t.Fatalf("Acquire with a done context = (%v, %v), want (nil, %v)", release != nil, err, want)
			}
		}
		checkIdle(t, s, 1)
	})
}

func TestLimitersContextEndsWhileWaiting(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		s := mk(1)
		hold := mustAcquire(t, s.lim, limitTopic)
		out := make(chan result, 2)

		ctx, cancel := context.WithCancel(context.Background())
		acquireAsync(ctx, s.lim, limitTopic, 0, out)
		waitFor(t, "waiter to queue", func() bool { return s.waiting() == 1 })
		cancel()
		if r := receive(t, out); !errors.Is(r.err, context.Canceled) || r.release != nil {
			t.Fatalf("cancelled waiter: err = %v, want context.Canceled and no release", r.err)
		}

		short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel2()
		acquireAsync(short, s.lim, limitTopic, 1, out)
		if r := receive(t, out); !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("expired waiter: err = %v, want context.DeadlineExceeded", r.err)
		}

		if got, w := s.inUse(), s.waiting(); got != 1 || w != 0 {
			t.Fatalf("InUse() = %d, Waiting() = %d; want 1, 0", got, w)
		}
		hold()
		checkIdle(t, s, 1)
	})
}

func TestLimitersReleaseIdempotent(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		s := mk(1)
		release := mustAcquire(t, s.lim, limitTopic)
		runAll(t, 16, func(int) { release() })
		release()
		if got := s.inUse(); got != 0 {
			t.Fatalf("InUse() = %d after repeated release, want 0", got)
		}

		// Repeated releases made no extra slot: a second acquirer waits.
		hold := mustAcquire(t, s.lim, limitTopic)
		out := make(chan result, 1)
		acquireAsync(patientContext(t), s.lim, limitTopic, 0, out)
		waitFor(t, "second acquirer to wait", func() bool { return s.waiting() == 1 })
		if got := s.inUse(); got != 1 {
			t.Fatalf("InUse() = %d, want 1", got)
		}
		release()
		if got := s.waiting(); got != 1 {
			t.Fatalf("a stale release admitted a waiter: Waiting() = %d, want 1", got)
		}
		hold()
		r := receive(t, out)
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.release()
		r.release()
		checkIdle(t, s, 1)
	})
}

// TestLimitersCancelRaceNeverSwallowsSlot frees the only slot at the very
// moment the first of two waiters is cancelled. Whoever wins, the slot must
// end with the first waiter (which then reports success) or go on to the
// second one.
func TestLimitersCancelRaceNeverSwallowsSlot(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		outcomes := map[string]int{}
		for range 300 {
			outcomes[cancelRace(t, mk(1))]++
		}
		t.Logf("first waiter outcomes: %v", outcomes)
	})
}

func cancelRace(t *testing.T, s subject) string {
	t.Helper()
	hold := mustAcquire(t, s.lim, limitTopic)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second := make(chan result, 1), make(chan result, 1)
	acquireAsync(ctx, s.lim, limitTopic, 0, first)
	waitFor(t, "first waiter", func() bool { return s.waiting() == 1 })
	acquireAsync(patientContext(t), s.lim, limitTopic, 1, second)
	waitFor(t, "second waiter", func() bool { return s.waiting() == 2 })

	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { <-start; cancel() })
	wg.Go(func() { <-start; hold() })
	close(start)
	wg.Wait()

	outcome := "served"
	r1 := receive(t, first)
	switch {
	case r1.err == nil:
		r1.release()
	case errors.Is(r1.err, context.Canceled):
		outcome = "cancelled"
	default:
		t.Fatalf("first waiter: %v", r1.err)
	}
	r2 := receive(t, second)
	if r2.err != nil {
		t.Fatalf("second waiter: %v", r2.err)
	}
	if got, w := s.inUse(), s.waiting(); got != 1 || w != 0 {
		t.Fatalf("with the second waiter served: InUse() = %d, Waiting() = %d; want 1, 0", got, w)
	}
	r2.release()
	checkIdle(t, s, 1)
	return outcome
}

// TestLimitersCancelStress has many goroutines acquire with contexts that
// end at random moments while slots are given back all the time.
func TestLimitersCancelStress(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		const limit = 3
		s := mk(limit)
		var g gauge
		var served, cancelled atomic.Int64
		runAll(t, 32, func(id int) {
			rng := rand.New(rand.NewPCG(uint64(id), 7))
			for range 200 {
				ok := acquireMaybeCancelled(t, s.lim, limitTopic, rng, &g)
				if ok {
					served.Add(1)
				} else {
					cancelled.Add(1)
				}
			}
		})
		t.Logf("served %d, cancelled %d", served.Load(), cancelled.Load())
		if p := g.peak.Load(); p > limit {
			t.Errorf("peak in use = %d, limit %d", p, limit)
		}
		checkIdle(t, s, limit)
	})
}

// acquireMaybeCancelled acquires a slot of l with a context that may end
// before, while or after it waits, holds the slot a little if it gets one,
// and reports whether it did.
func acquireMaybeCancelled(t *testing.T, l taskproc.Limiter, tp string, rng *rand.Rand, g *gauge) bool {
	ctx, cancel := context.WithTimeout(context.Background(), limitPatience)
	defer cancel()
	switch rng.IntN(4) {
	case 0:
		cancel()
	case 1:
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, time.Duration(rng.IntN(200))*time.Microsecond)
		defer cancelT()
	case 2:
		k := rng.IntN(20)
		go func() {
			spin(k)
			cancel()
		}()
	}
	hold := rng.IntN(5)
	release, err := l.Acquire(ctx, tp)
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire: %v", err)
		}
		return false
	}
	g.enter()
	spin(hold)
	g.leave()
	release()
	return true
}

func TestLimitersSetLimit(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		s := mk(1)
		held := []func(){mustAcquire(t, s.lim, limitTopic)}
		served := queueWaiters(t, s.lim, s.waiting, []string{limitTopic, limitTopic, limitTopic})

		s.setLimit(4)
		if got, w := s.inUse(), s.waiting(); got != 4 || w != 0 {
			t.Fatalf("after raising the limit: InUse() = %d, Waiting() = %d; want 4, 0", got, w)
		}
		for range 3 {
			r := receive(t, served)
			if r.err != nil {
				t.Fatal(r.err)
			}
			held = append(held, r.release)
		}

		s.setLimit(2)
		if got := s.inUse(); got != 4 {
			t.Fatalf("lowering the limit revoked slots: InUse() = %d, want 4", got)
		}
		late := queueWaiters(t, s.lim, s.waiting, []string{limitTopic})
		held[0]()
		held[1]()
		if got, w := s.inUse(), s.waiting(); got != 2 || w != 1 {
			t.Fatalf("at the lowered limit: InUse() = %d, Waiting() = %d; want 2, 1", got, w)
		}
		held[2]()
		if got, w := s.inUse(), s.waiting(); got != 2 || w != 0 {
			t.Fatalf("below the lowered limit: InUse() = %d, Waiting() = %d; want 2, 0", got, w)
		}
		r := receive(t, late)
		r.release()
		held[3]()
		checkIdle(t, s, 2)
	})
}

func TestLimitersZeroLimitAdmitsNothing(t *testing.T) {
	forEachSubject(t, func(t *testing.T, mk func(int) subject) {
		for _, n := range []int{0, -3} {
			s := mk(n)
			served := queueWaiters(t, s.lim, s.waiting, []string{limitTopic})
			if got := s.inUse(); got != 0 {
				t.Fatalf("limit %d: InUse() = %d, want 0", n, got)
			}
			s.setLimit(1)
			r := receive(t, served)
			if r.err != nil {
				t.Fatal(r.err)
			}
			r.release()
			checkIdle(t, s, 1)
		}
	})
}

func TestBoundedFIFO(t *testing.T) {
	l := taskproc.NewBoundedLimiter(1)
	hold := mustAcquire(t, l, "a")
	topics := []string{"a", "b", "c", "a", "b", "c", "a", "b", "c", "d"}
	served := queueWaiters(t, l, l.Waiting, topics)
	hold()
	order := serveOrder(t, served, len(topics))
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(order, want) {
		t.Fatalf("served %v, want %v", order, want)
	}
}

func TestBoundedSharedAcrossTopics(t *testing.T) {
	l := taskproc.NewBoundedLimiter(2)
	ra := mustAcquire(t, l, "a")
	rb := mustAcquire(t, l, "b")
	served := queueWaiters(t, l, l.Waiting, []string{"c"})
	rb()
	if r := receive(t, served); r.err != nil {
		t.Fatal(r.err)
	} else {
		r.release()
	}
	ra()
	if got := l.InUse(); got != 0 {
		t.Fatalf("InUse() = %d, want 0", got)
	}
}

func priorities(m map[string]int) func(string) int {
	return func(limitTopic string) int { return m[limitTopic] }
}

func TestPrioritizingOrder(t *testing.T) {
	l := taskproc.NewPriorityLimiter(1, priorities(map[string]int{"a": 1, "b": 2, "c": 3}))
	hold := mustAcquire(t, l, "a")
	topics := []string{"a", "b", "c", "a", "c", "b", "z", "c"}
	served := queueWaiters(t, l, l.Waiting, topics)
	hold()
	order := serveOrder(t, served, len(topics))
	if want := []int{2, 4, 7, 1, 5, 0, 3, 6}; !slices.Equal(order, want) {
		t.Fatalf("served %v, want %v", order, want)
	}
}

func TestPrioritizingNilPriorityIsFIFO(t *testing.T) {
	l := taskproc.NewPriorityLimiter(1, nil)
	hold := mustAcquire(t, l, "x")
	topics := []string{"x", "y", "z", "y", "x"}
	served := queueWaiters(t, l, l.Waiting, topics)
	hold()
	order := serveOrder(t, served, len(topics))
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("served %v, want %v", order, want)
	}
}

func TestPrioritizingReadsPriorityWhenWaiting(t *testing.T) {
	var xPrio atomic.Int64
	xPrio.Store(1)
	l := taskproc.NewPriorityLimiter(1, func(limitTopic string) int {
		if limitTopic == "x" {
			return int(xPrio.Load())
		}
		return 3
	})
	hold := mustAcquire(t, l, "y")
	served := make(chan result)
	enqueue(t, l, l.Waiting, "x", 0, served)
	xPrio.Store(5)
	enqueue(t, l, l.Waiting, "x", 1, served)
	enqueue(t, l, l.Waiting, "y", 2, served)
	hold()
	// Waiter 0 keeps the priority 1 it had when it started waiting.
	if order := serveOrder(t, served, 3); !slices.Equal(order, []int{1, 2, 0}) {
		t.Fatalf("served %v, want [1 2 0]", order)
	}
}

func TestPrioritizingReserve(t *testing.T) {
	l := taskproc.NewPriorityLimiter(2, priorities(map[string]int{"high": 10, "low": 0}))
	l.Reserve("low", 1)
	hold1 := mustAcquire(t, l, "high")
	hold2 := mustAcquire(t, l, "high")
	served := queueWaiters(t, l, l.Waiting, []string{"high", "high", "low", "low"})

	next := func(free func(), want int) func() {
		t.Helper()
		free()
		r := receive(t, served)
		if r.err != nil || r.id != want {
			t.Fatalf("served waiter %d (err %v), want %d", r.id, r.err, want)
		}
		return r.release
	}
	low2 := next(hold1, 2)  // low holds 0 < 1 reserved: served first
	high0 := next(hold2, 0) // low holds its reserve: priority again
	low3 := next(low2, 3)   // low back below its reserve
	high1 := next(high0, 1)
	low3()
	high1()
	if got, w := l.InUse(), l.Waiting(); got != 0 || w != 0 {
		t.Fatalf("InUse() = %d, Waiting() = %d; want 0, 0", got, w)
	}
}

func TestPrioritizingReserveOldestFirst(t *testing.T) {
	l := taskproc.NewPriorityLimiter(1, priorities(map[string]int{"hi": 10, "b": 1, "c": 0}))
	l.Reserve("b", 1)
	l.Reserve("c", 2)
	hold := mustAcquire(t, l, "hi")
	topics := []string{"hi", "c", "b", "hi", "c"}
	served := queueWaiters(t, l, l.Waiting, topics)
	hold()
	order := serveOrder(t, served, len(topics))
	// c and b are below their reserves: their waiters go first, oldest
	// first, whatever their priorities; then priority order.
	if want := []int{1, 2, 4, 0, 3}; !slices.Equal(order, want) {
		t.Fatalf("served %v, want %v", order, want)
	}
}

func TestPrioritizingReserveRemoved(t *testing.T) {
	l := taskproc.NewPriorityLimiter(1, priorities(map[string]int{"hi": 10, "lo": 0}))
	l.Reserve("lo", 1)
	l.Reserve("lo", 0)
	hold := mustAcquire(t, l, "hi")
	served := queueWaiters(t, l, l.Waiting, []string{"lo", "hi"})
	hold()
	if order := serveOrder(t, served, 2); !slices.Equal(order, []int{1, 0}) {
		t.Fatalf("served %v, want [1 0]", order)
	}
}

// TestPrioritizingStressWithReserves checks that reserves, even summing to
// more than the limit, never let more slots be in use than the limit, with
// contexts ending at random moments.
func TestPrioritizingStressWithReserves(t *testing.T) {
	const limit = 3
	topics := []string{"t0", "t1", "t2", "t3"}
	l := taskproc.NewPriorityLimiter(limit, priorities(map[string]int{"t0": 0, "t1": 1, "t2": 2, "t3": 3}))
	l.Reserve("t0", 2)
	l.Reserve("t1", 2)
	var g gauge
	perTopic := make([]atomic.Int64, len(topics))
	runAll(t, 32, func(id int) {
		rng := rand.New(rand.NewPCG(uint64(id), 11))
		for range 200 {
			i := rng.IntN(len(topics))
			if acquireMaybeCancelled(t, l, topics[i], rng, &g) {
				perTopic[i].Add(1)
			}
		}
	})
	if p := g.peak.Load(); p > limit {
		t.Errorf("peak in use = %d, limit %d", p, limit)
	}
	for i := range perTopic {
		t.Logf("topic %s served %d times", topics[i], perTopic[i].Load())
	}
	checkIdle(t, subject{lim: l, inUse: l.InUse, waiting: l.Waiting}, limit)
}

func TestPerTopicQueueFull(t *testing.T) {
	l := taskproc.NewTopicLimiter(1, 2)
	hold := mustAcquire(t, l, "a")
	waiting := func() int { return l.Waiting("a") }
	served := queueWaiters(t, l, waiting, []string{"a", "a"})

	_, err := l.Acquire(patientContext(t), "a")
	if !errors.Is(err, taskproc.ErrQueueFull) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("third waiter: err = %v, want ErrQueueFull naming topic a", err)
	}
	if got := l.Waiting("a"); got != 2 {
		t.Fatalf("Waiting(a) = %d, want 2", got)
	}
	hold()
	if order := serveOrder(t, served, 2); !slices.Equal(order, []int{0, 1}) {
		t.Fatalf("served %v, want [0 1]", order)
	}
	if got, w := l.InUse("a"), l.Waiting("a"); got != 0 || w != 0 {
		t.Fatalf("InUse(a) = %d, Waiting(a) = %d; want 0, 0", got, w)
	}
}

func TestPerTopicTopicsIndependent(t *testing.T) {
	l := taskproc.NewTopicLimiter(2, 1)
	a := []func(){mustAcquire(t, l, "a"), mustAcquire(t, l, "a")}
	servedA := queueWaiters(t, l, func() int { return l.Waiting("a") }, []string{"a"})
	if _, err := l.Acquire(patientContext(t), "a"); !errors.Is(err, taskproc.ErrQueueFull) {
		t.Fatalf("topic a: err = %v, want ErrQueueFull", err)
	}

	// Topic a is saturated and its queue full; topic b has all its own.
	b := []func(){mustAcquire(t, l, "b"), mustAcquire(t, l, "b")}
	servedB := queueWaiters(t, l, func() int { return l.Waiting("b") }, []string{"b"})
	if got, w := l.InUse("b"), l.Waiting("b"); got != 2 || w != 1 {
		t.Fatalf("InUse(b) = %d, Waiting(b) = %d; want 2, 1", got, w)
	}
	b[0]()
	rb := receive(t, servedB)
	if got, w := l.InUse("a"), l.Waiting("a"); got != 2 || w != 1 {
		t.Fatalf("topic b moved topic a: InUse(a) = %d, Waiting(a) = %d; want 2, 1", got, w)
	}
	a[0]()
	ra := receive(t, servedA)
	for _, release := range []func(){ra.release, rb.release, a[1], b[1]} {
		release()
	}
	for _, tp := range []string{"a", "b"} {
		if got, w := l.InUse(tp), l.Waiting(tp); got != 0 || w != 0 {
			t.Fatalf("InUse(%s) = %d, Waiting(%s) = %d; want 0, 0", tp, got, tp, w)
		}
	}
}

func TestPerTopicSetLimits(t *testing.T) {
	l := taskproc.NewTopicLimiter(1, 1)
	waiting := func() int { return l.Waiting("a") }
	held := []func(){mustAcquire(t, l, "a")}
	served := queueWaiters(t, l, waiting, []string{"a"})
	if _, err := l.Acquire(patientContext(t), "a"); !errors.Is(err, taskproc.ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}

	l.SetLimits(1, 3)
	more := queueWaiters(t, l, waiting, []string{"a", "a"})
	l.SetLimits(1, 1)
	if got := l.Waiting("a"); got != 3 {
		t.Fatalf("lowering the queue evicted waiters: Waiting(a) = %d, want 3", got)
	}
	if _, err := l.Acquire(patientContext(t), "a"); !errors.Is(err, taskproc.ErrQueueFull) {
		t.Fatalf("beyond the lowered queue: err = %v, want ErrQueueFull", err)
	}

	l.SetLimits(4, 1)
	if got, w := l.InUse("a"), l.Waiting("a"); got != 4 || w != 0 {
		t.Fatalf("after raising concurrency: InUse(a) = %d, Waiting(a) = %d; want 4, 0", got, w)
	}
	for _, ch := range []<-chan result{served, more, more} {
		held = append(held, receive(t, ch).release)
	}

	l.SetLimits(2, 1)
	late := queueWaiters(t, l, waiting, []string{"a"})
	held[0]()
	held[1]()
	if got, w := l.InUse("a"), l.Waiting("a"); got != 2 || w != 1 {
		t.Fatalf("at lowered concurrency: InUse(a) = %d, Waiting(a) = %d; want 2, 1", got, w)
	}
	held[2]()
	receive(t, late).release()
	held[3]()
	if got, w := l.InUse("a"), l.Waiting("a"); got != 0 || w != 0 {
		t.Fatalf("InUse(a) = %d, Waiting(a) = %d; want 0, 0", got, w)
	}
}

func TestPerTopicStress(t *testing.T) {
	const concurrency = 2
	topics := []string{"t0", "t1", "t2", "t3"}
	l := taskproc.NewTopicLimiter(concurrency, 32)
	gauges := make([]gauge, len(topics))
	runAll(t, 32, func(id int) {
		i := id % len(topics)
		for range 300 {
			release, err := l.Acquire(patientContext(t), topics[i])
			if err != nil {
				t.Error(err)
				return
			}
			gauges[i].enter()
			spin(2)
			gauges[i].leave()
			release()
		}
	})
	for i, tp := range topics {
		if p := gauges[i].peak.Load(); p > concurrency {
			t.Errorf("topic %s: peak in use = %d, concurrency %d", tp, p, concurrency)
		}
		if got, w := l.InUse(tp), l.Waiting(tp); got != 0 || w != 0 {
			t.Errorf("InUse(%s) = %d, Waiting(%s) = %d; want 0, 0", tp, got, tp, w)
		}
	}
}

// orderRecorder logs the calls made to fake limiters.
type orderRecorder struct {
	mu  sync.Mutex
	log []string
}

func (r *orderRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *orderRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	log := r.log
	r.log = nil
	return log
}

// fakeLimiter records its calls. Its release functions are not idempotent,
// so that Chain must make its own so.
type fakeLimiter struct {
	name string
	rec  *orderRecorder
	err  error
}

func (f fakeLimiter) Acquire(context.Context, string) (func(), error) {
	if f.err != nil {
		f.rec.add("fail " + f.name)
		return nil, f.err
	}
	f.rec.add("acquire " + f.name)
	return func() { f.rec.add("release " + f.name) }, nil
}

func TestChainOrder(t *testing.T) {
	rec := &orderRecorder{}
	l := taskproc.Chain(fakeLimiter{"a", rec, nil}, fakeLimiter{"b", rec, nil}, fakeLimiter{"c", rec, nil})
	release := mustAcquire(t, l, limitTopic)
	if got, want := rec.take(), []string{"acquire a", "acquire b", "acquire c"}; !slices.Equal(got, want) {
		t.Fatalf("acquire: %v, want %v", got, want)
	}
	release()
	release()
	if got, want := rec.take(), []string{"release c", "release b", "release a"}; !slices.Equal(got, want) {
		t.Fatalf("release: %v, want %v", got, want)
	}
}

func TestChainRollback(t *testing.T) {
	rec := &orderRecorder{}
	boom := errors.New("boom")
	l := taskproc.Chain(
		fakeLimiter{"a", rec, nil}, fakeLimiter{"b", rec, nil},
		fakeLimiter{"c", rec, boom}, fakeLimiter{"d", rec, nil},
	)
	release, err := l.Acquire(patientContext(t), limitTopic)
	if !errors.Is(err, boom) || release != nil {
		t.Fatalf("Acquire = (%v, %v), want (nil, boom)", release != nil, err)
	}
	want := []string{"acquire a", "acquire b", "fail c", "release b", "release a"}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
}

func TestChainRealLimiters(t *testing.T) {
	shared := taskproc.NewBoundedLimiter(1)
	perTopic := taskproc.NewTopicLimiter(1, 0)
	l := taskproc.Chain(shared, perTopic)

	hold := mustAcquire(t, perTopic, limitTopic)
	if _, err := l.Acquire(patientContext(t), limitTopic); !errors.Is(err, taskproc.ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}
	if got := shared.InUse(); got != 0 {
		t.Fatalf("rollback left Bounded InUse() = %d, want 0", got)
	}

	perTopic.SetLimits(1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan result, 1)
	acquireAsync(ctx, l, limitTopic, 0, out)
	waitFor(t, "chain to wait on PerTopic", func() bool { return perTopic.Waiting(limitTopic) == 1 })
	if got := shared.InUse(); got != 1 {
		t.Fatalf("Bounded InUse() = %d while the chain waits, want 1", got)
	}
	cancel()
	if r := receive(t, out); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", r.err)
	}
	if got, w := shared.InUse(), perTopic.Waiting(limitTopic); got != 0 || w != 0 {
		t.Fatalf("after cancel: Bounded InUse() = %d, PerTopic Waiting() = %d; want 0, 0", got, w)
	}

	hold()
	release := mustAcquire(t, l, limitTopic)
	if shared.InUse() != 1 || perTopic.InUse(limitTopic) != 1 {
		t.Fatalf("chain holds %d and %d slots, want 1 and 1", shared.InUse(), perTopic.InUse(limitTopic))
	}
	release()
	release()
	if shared.InUse() != 0 || perTopic.InUse(limitTopic) != 0 {
		t.Fatalf("after release: %d and %d slots in use, want 0 and 0", shared.InUse(), perTopic.InUse(limitTopic))
	}
}

func TestChainEmpty(t *testing.T) {
	l := taskproc.Chain()
	mustAcquire(t, l, limitTopic)()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, limitTopic); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
