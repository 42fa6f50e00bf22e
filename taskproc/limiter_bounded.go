package taskproc

import (
	"context"
	"sync"
)

// BoundedLimiter is a Limiter with a fixed number of slots shared by every
// topic that uses it. Acquirers that find no free slot are served in the
// order they arrived. Create one with NewBoundedLimiter.
type BoundedLimiter struct {
	mu      sync.Mutex
	limit   int
	inUse   int
	waiters fifo[*waiter]
}

// NewBoundedLimiter returns a limiter that lets at most n slots be in use at once,
// across all topics, and serves waiting acquirers first come, first served.
// When n is less than 1, no slot is handed out until SetLimit raises the
// limit.
func NewBoundedLimiter(n int) *BoundedLimiter { return &BoundedLimiter{limit: n} }

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
