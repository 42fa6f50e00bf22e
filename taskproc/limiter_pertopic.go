package taskproc

import (
	"context"
	"fmt"
	"sync"
)

// TopicLimiter is a Limiter that bounds each topic on its own: how many
// slots of the topic are in use at once and how many of its acquirers may
// wait. Waiters of a topic are served in the order they arrived. Create one
// with NewTopicLimiter.
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

// NewTopicLimiter returns a limiter that lets at most concurrency slots of each
// topic be in use at once and at most queue acquirers of each topic wait;
// an Acquire that would make one waiter too many fails at once with an
// error that wraps ErrQueueFull and names the topic. Topics do not affect
// each other. When concurrency is less than 1, no slot is handed out until
// SetLimits raises it; a queue of 0 or less lets no acquirer wait.
func NewTopicLimiter(concurrency, queue int) *TopicLimiter {
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
