package taskproc

import (
	"container/heap"
	"context"
	"sync"
)

// PriorityLimiter is a Limiter with a fixed number of slots shared by every
// topic that uses it, which serves waiting acquirers by the priority of
// their topic and honours per-topic reserves. Create one with NewPriorityLimiter.
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

// NewPriorityLimiter returns a limiter that lets at most n slots be in use at
// once, across all topics. When a slot frees, it goes to the waiting
// acquirer whose topic has the highest priority, the one that has waited
// longest among equal priorities, unless a topic below its reserve waits
// (see Reserve). Acquire calls priority once, before it waits and without
// the limiter's lock held; a nil priority gives every topic the same
// priority. When n is less than 1, no slot is handed out until SetLimit
// raises the limit.
func NewPriorityLimiter(n int, priority func(topic string) int) *PriorityLimiter {
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
