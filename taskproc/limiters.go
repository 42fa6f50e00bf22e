package taskproc

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
)

// This file holds the Limiter implementations. They share one way of waiting:
// an acquirer that cannot have a slot at once queues a waiter and blocks on
// its channel. Whoever frees a slot hands it over with the limiter's lock
// held, by counting it as in use and closing the waiter's channel. A waiter
// whose context ends takes the lock and looks whether a slot was handed to it
// meanwhile: if so it gives the slot back (which hands it on to the next
// waiter), otherwise it leaves the queue. So no slot is ever lost to a waiter
// that has given up.

// waiter is an Acquire call waiting for a slot.
type waiter struct {
	ready   chan struct{} // closed when a slot is handed over
	granted bool          // guarded by the lock of the limiter that queued it
}

func newWaiter() *waiter { return &waiter{ready: make(chan struct{})} }

// grant hands a slot to w. The caller holds the limiter's lock and has
// already counted the slot as in use.
func (w *waiter) grant() {
	w.granted = true
	close(w.ready)
}

// await blocks until w is granted a slot or ctx ends. When ctx ends first,
// await calls abandon with mu held, so that abandon sees a settled
// w.granted: it must give the slot back if w was granted one at the moment
// ctx ended, and otherwise take w out of its queue.
func await(ctx context.Context, mu *sync.Mutex, w *waiter, abandon func()) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	abandon()
	return ctx.Err()
}

// fifo is a first-in first-out list from which any element can be removed
// in constant time.
type fifo[T any] struct {
	head, tail *link[T]
	n          int
}

// link is the place of one value in a fifo.
type link[T any] struct {
	val        T
	prev, next *link[T]
	list       *fifo[T] // nil once removed
}

func (q *fifo[T]) len() int { return q.n }

func (q *fifo[T]) front() *link[T] { return q.head }

func (q *fifo[T]) push(v T) *link[T] {
	e := &link[T]{val: v, prev: q.tail, list: q}
	if q.tail == nil {
		q.head = e
	} else {
		q.tail.next = e
	}
	q.tail = e
	q.n++
	return e
}

func (q *fifo[T]) pop() T {
	e := q.head
	q.remove(e)
	return e.val
}

// remove takes e out of q. It does nothing when e is no longer in q.
func (q *fifo[T]) remove(e *link[T]) {
	if e.list != q {
		return
	}
	if e.prev == nil {
		q.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		q.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.prev, e.next, e.list = nil, nil, nil
	q.n--
}

// BoundedLimiter is a Limiter with a fixed number of slots shared by every
// topic that uses it. Acquirers that find no free slot are served in the
// order they arrived. Create one with Bounded.
type BoundedLimiter struct {
	mu      sync.Mutex
	limit   int
	inUse   int
	waiters fifo[*waiter]
}

// Bounded returns a limiter that lets at most n slots be in use at once,
// across all topics, and serves waiting acquirers first come, first served.
// When n is less than 1, no slot is handed out until SetLimit raises the
// limit.
func Bounded(n int) *BoundedLimiter { return &BoundedLimiter{limit: n} }

// Acquire waits for a free slot, as described by Limiter. The topic is not
// used.
func (l *BoundedLimiter) Acquire(ctx context.Context, _ string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.waiters.len() == 0 && l.inUse < l.limit {
		l.inUse++
		l.mu.Unlock()
		return sync.OnceFunc(l.free), nil
	}
	w := newWaiter()
	e := l.waiters.push(w)
	l.mu.Unlock()
	err := await(ctx, &l.mu, w, func() {
		if w.granted {
			l.freeLocked()
		} else {
			l.waiters.remove(e)
		}
	})
	if err != nil {
		return nil, err
	}
	return sync.OnceFunc(l.free), nil
}

// SetLimit changes the number of slots to n. Raising it serves waiting
// acquirers at once. Lowering it takes back no slot in use: new acquirers
// wait until fewer than n slots are in use.
func (l *BoundedLimiter) SetLimit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = n
	l.admit()
}

// InUse returns the number of slots in use.
func (l *BoundedLimiter) InUse() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse
}

// Waiting returns the number of acquirers waiting for a slot.
func (l *BoundedLimiter) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiters.len()
}

func (l *BoundedLimiter) free() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freeLocked()
}

func (l *BoundedLimiter) freeLocked() {
	l.inUse--
	l.admit()
}

// admit hands free slots to the oldest waiters.
func (l *BoundedLimiter) admit() {
	for l.inUse < l.limit && l.waiters.len() > 0 {
		l.inUse++
		l.waiters.pop().grant()
	}
}

// PriorityLimiter is a Limiter with a fixed number of slots shared by every
// topic that uses it, which serves waiting acquirers by the priority of
// their topic and honours per-topic reserves. Create one with Prioritizing.
type PriorityLimiter struct {
	priority func(topic string) int

	mu       sync.Mutex
	limit    int
	inUse    int
	seq      uint64                 // arrival number of the latest waiter
	queue    priorityQueue          // every waiter
	shares   map[string]*topicShare // topics that hold, await or reserve slots
	reserved map[string]*topicShare // topics with a reserve
}

// topicShare is what one topic holds, reserves and awaits of a
// PriorityLimiter.
type topicShare struct {
	topic   string
	held    int
	reserve int
	waiters fifo[*prioWaiter] // oldest first
}

func (s *topicShare) belowReserve() bool { return s.held < s.reserve }

func (s *topicShare) idle() bool {
	return s.held == 0 && s.reserve == 0 && s.waiters.len() == 0
}

// prioWaiter is a waiter of a PriorityLimiter.
type prioWaiter struct {
	*waiter
	share *topicShare
	prio  int
	seq   uint64
	index int                // place in the priorityQueue
	link  *link[*prioWaiter] // place in share.waiters
}

// priorityQueue is a heap of waiters, the highest priority on top and the
// oldest on top among equal priorities.
type priorityQueue []*prioWaiter

func (q priorityQueue) Len() int { return len(q) }

func (q priorityQueue) Less(i, j int) bool {
	if q[i].prio != q[j].prio {
		return q[i].prio > q[j].prio
	}
	return q[i].seq < q[j].seq
}

func (q priorityQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *priorityQueue) Push(x any) {
	w := x.(*prioWaiter)
	w.index = len(*q)
	*q = append(*q, w)
}

func (q *priorityQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return w
}

// Prioritizing returns a limiter that lets at most n slots be in use at
// once, across all topics. When a slot frees, it goes to the waiting
// acquirer whose topic has the highest priority, the one that has waited
// longest among equal priorities, unless a topic below its reserve waits
// (see Reserve). Acquire calls priority once, before it waits and without
// the limiter's lock held; a nil priority gives every topic the same
// priority. When n is less than 1, no slot is handed out until SetLimit
// raises the limit.
func Prioritizing(n int, priority func(topic string) int) *PriorityLimiter {
	return &PriorityLimiter{
		priority: priority,
		limit:    n,
		shares:   make(map[string]*topicShare),
		reserved: make(map[string]*topicShare),
	}
}

// Acquire waits for a free slot for topic, as described by Limiter.
func (l *PriorityLimiter) Acquire(ctx context.Context, topic string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prio := l.priorityOf(topic)
	l.mu.Lock()
	s := l.share(topic)
	if l.queue.Len() == 0 && l.inUse < l.limit {
		l.take(s)
		l.mu.Unlock()
		return l.releaser(s), nil
	}
	w := l.enqueue(s, prio)
	l.mu.Unlock()
	if err := await(ctx, &l.mu, w.waiter, func() { l.abandon(w) }); err != nil {
		return nil, err
	}
	return l.releaser(s), nil
}

// Reserve sets the number of slots reserved for topic to min. While topic
// holds fewer slots than it reserves, its waiters are served before those
// of any topic that holds at least its reserve, whatever their priorities;
// among topics below their reserves, the waiter that has waited longest is
// served first. A reserve adds no slot: it only decides who is served next
// when a slot frees. A min of 0 or less removes the reserve.
func (l *PriorityLimiter) Reserve(topic string, min int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.share(topic)
	s.reserve = max(min, 0)
	if s.reserve > 0 {
		l.reserved[topic] = s
	} else {
		delete(l.reserved, topic)
	}
	l.dropIfIdle(s)
}

// SetLimit changes the number of slots to n. Raising it serves waiting
// acquirers at once. Lowering it takes back no slot in use: new acquirers
// wait until fewer than n slots are in use.
func (l *PriorityLimiter) SetLimit(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = n
	l.admit()
}

// InUse returns the number of slots in use.
func (l *PriorityLimiter) InUse() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse
}

// Waiting returns the number of acquirers waiting for a slot.
func (l *PriorityLimiter) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.Len()
}

func (l *PriorityLimiter) priorityOf(topic string) int {
	if l.priority == nil {
		return 0
	}
	return l.priority(topic)
}

// share returns the share of topic, creating it if need be.
func (l *PriorityLimiter) share(topic string) *topicShare {
	s, ok := l.shares[topic]
	if !ok {
		s = &topicShare{topic: topic}
		l.shares[topic] = s
	}
	return s
}

// dropIfIdle forgets s once it holds, awaits and reserves nothing, so that
// short-lived topics do not pile up.
func (l *PriorityLimiter) dropIfIdle(s *topicShare) {
	if s.idle() {
		delete(l.shares, s.topic)
	}
}

func (l *PriorityLimiter) take(s *topicShare) {
	l.inUse++
	s.held++
}

func (l *PriorityLimiter) releaser(s *topicShare) func() {
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.freeLocked(s)
	})
}

func (l *PriorityLimiter) freeLocked(s *topicShare) {
	l.inUse--
	s.held--
	l.admit()
	l.dropIfIdle(s)
}

func (l *PriorityLimiter) enqueue(s *topicShare, prio int) *prioWaiter {
	l.seq++
	w := &prioWaiter{waiter: newWaiter(), share: s, prio: prio, seq: l.seq}
	heap.Push(&l.queue, w)
	w.link = s.waiters.push(w)
	return w
}

func (l *PriorityLimiter) dequeue(w *prioWaiter) {
	heap.Remove(&l.queue, w.index)
	w.share.waiters.remove(w.link)
}

// abandon settles a waiter whose context ended: see await.
func (l *PriorityLimiter) abandon(w *prioWaiter) {
	if w.granted {
		l.freeLocked(w.share)
		return
	}
	l.dequeue(w)
	l.dropIfIdle(w.share)
}

// admit hands free slots to waiters, the next one first.
func (l *PriorityLimiter) admit() {
	for l.inUse < l.limit && l.queue.Len() > 0 {
		w := l.next()
		l.dequeue(w)
		l.take(w.share)
		w.grant()
	}
}

// next returns the waiter to serve next: the oldest waiter of a topic below
// its reserve if there is one, else the top of the priority queue.
func (l *PriorityLimiter) next() *prioWaiter {
	var oldest *prioWaiter
	for _, s := range l.reserved {
		if !s.belowReserve() || s.waiters.len() == 0 {
			continue
		}
		if w := s.waiters.front().val; oldest == nil || w.seq < oldest.seq {
			oldest = w
		}
	}
	if oldest != nil {
		return oldest
	}
	return l.queue[0]
}

// TopicLimiter is a Limiter that bounds each topic on its own: how many
// slots of the topic are in use at once and how many of its acquirers may
// wait. Waiters of a topic are served in the order they arrived. Create one
// with PerTopic.
type TopicLimiter struct {
	mu          sync.Mutex
	concurrency int
	queue       int
	lanes       map[string]*topicLane // topics that hold or await slots
}

// topicLane is the slots and waiters of one topic of a TopicLimiter.
type topicLane struct {
	inUse   int
	waiters fifo[*waiter]
}

func (t *topicLane) idle() bool { return t.inUse == 0 && t.waiters.len() == 0 }

// admit hands free slots to the oldest waiters of t.
func (t *topicLane) admit(concurrency int) {
	for t.inUse < concurrency && t.waiters.len() > 0 {
		t.inUse++
		t.waiters.pop().grant()
	}
}

// PerTopic returns a limiter that lets at most concurrency slots of each
// topic be in use at once and at most queue acquirers of each topic wait;
// an Acquire that would make one waiter too many fails at once with an
// error that wraps ErrQueueFull and names the topic. Topics do not affect
// each other. When concurrency is less than 1, no slot is handed out until
// SetLimits raises it; a queue of 0 or less lets no acquirer wait.
func PerTopic(concurrency, queue int) *TopicLimiter {
	return &TopicLimiter{
		concurrency: concurrency,
		queue:       queue,
		lanes:       make(map[string]*topicLane),
	}
}

// Acquire waits for a free slot of topic, as described by Limiter, or
// fails with ErrQueueFull when too many acquirers of topic already wait.
func (l *TopicLimiter) Acquire(ctx context.Context, topic string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	t := l.lane(topic)
	if t.waiters.len() == 0 && t.inUse < l.concurrency {
		t.inUse++
		l.mu.Unlock()
		return l.releaser(topic, t), nil
	}
	if t.waiters.len() >= l.queue {
		l.dropIfIdle(topic, t)
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: topic %q", ErrQueueFull, topic)
	}
	w := newWaiter()
	e := t.waiters.push(w)
	l.mu.Unlock()
	err := await(ctx, &l.mu, w, func() {
		if w.granted {
			l.freeLocked(topic, t)
			return
		}
		t.waiters.remove(e)
		l.dropIfIdle(topic, t)
	})
	if err != nil {
		return nil, err
	}
	return l.releaser(topic, t), nil
}

// SetLimits changes the per-topic limits. Raising concurrency serves
// waiting acquirers at once; lowering it takes back no slot in use. Lowering
// queue makes no waiter leave: it only refuses new acquirers while as many
// wait as the new queue allows.
func (l *TopicLimiter) SetLimits(concurrency, queue int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.concurrency, l.queue = concurrency, queue
	for _, t := range l.lanes {
		t.admit(concurrency)
	}
}

// InUse returns the number of slots of topic in use.
func (l *TopicLimiter) InUse(topic string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.lanes[topic]; ok {
		return t.inUse
	}
	return 0
}

// Waiting returns the number of acquirers of topic waiting for a slot.
func (l *TopicLimiter) Waiting(topic string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.lanes[topic]; ok {
		return t.waiters.len()
	}
	return 0
}

// lane returns the lane of topic, creating it if need be.
func (l *TopicLimiter) lane(topic string) *topicLane {
	t, ok := l.lanes[topic]
	if !ok {
		t = &topicLane{}
		l.lanes[topic] = t
	}
	return t
}

// dropIfIdle forgets t once it holds and awaits nothing, so that
// short-lived topics do not pile up.
func (l *TopicLimiter) dropIfIdle(topic string, t *topicLane) {
	if t.idle() {
		delete(l.lanes, topic)
	}
}

func (l *TopicLimiter) releaser(topic string, t *topicLane) func() {
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.freeLocked(topic, t)
	})
}

func (l *TopicLimiter) freeLocked(topic string, t *topicLane) {
	t.inUse--
	t.admit(l.concurrency)
	l.dropIfIdle(topic, t)
}

// Chain returns a Limiter that acquires a slot of each of limiters in
// order and gives them back in reverse order. When one of them fails, the
// slots already acquired are given back before Acquire returns its error.
// A Chain of no limiters never waits.
func Chain(limiters ...Limiter) Limiter { return chain(slices.Clone(limiters)) }

// chain is the Limiter returned by Chain.
type chain []Limiter

func (c chain) Acquire(ctx context.Context, topic string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	releases := make([]func(), 0, len(c))
	for _, l := range c {
		release, err := l.Acquire(ctx, topic)
		if err != nil {
			releaseAll(releases)
			return nil, err
		}
		releases = append(releases, release)
	}
	return sync.OnceFunc(func() { releaseAll(releases) }), nil
}

// releaseAll calls releases from last to first.
func releaseAll(releases []func()) {
	for _, release := range slices.Backward(releases) {
		release()
	}
}
