package taskproc

import (
	"context"
	"sync"
)

// The Limiter implementations (limiter_*.go) share one way of waiting:
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
