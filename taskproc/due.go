package taskproc

import (
	"sync"
	"time"
)

// dueFloor is the shortest wait for a due time.
const dueFloor = 2 * time.Millisecond

// dueWatch knows when the earliest deferred task of a Manager's topic
// becomes due, so that the loop, idle otherwise, polls then rather than
// after its pause. A poll's transaction reads NextDue first, but only when
// something may have deferred a task since the last read: this process
// retried or snoozed one, a Notifier told of a push of deferred tasks (not
// of ready ones: see Notifier), Resume was called, or the due time read
// before has passed. Without a Notifier nothing tells of pushes, so every
// poll after an empty one reads it. A busy loop thus reads it only after
// its own retries, and one woken for ready tasks not at all. A Defer
// elsewhere wakes nobody: its task is polled within a pause of its time.
type dueWatch struct {
	mu     sync.Mutex
	at     time.Time // when the earliest deferred task is due; zero for none
	stale  bool      // something happened since the last read
	always bool      // no Notifier
	idle   bool      // the last poll found nothing
}

func newDueWatch(s settings) *dueWatch {
	return &dueWatch{stale: true, always: s.notifier == nil}
}

// touch tells that a task may have been deferred.
func (w *dueWatch) touch() {
	w.mu.Lock()
	w.stale = true
	w.mu.Unlock()
}

// wanted reports whether the next poll should read NextDue.
func (w *dueWatch) wanted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return (w.always && w.idle) || w.stale
}

// polled records whether a poll found nothing.
func (w *dueWatch) polled(empty bool) {
	w.mu.Lock()
	w.idle = empty
	w.mu.Unlock()
}

// set records what NextDue said: the next due time, zero for nothing
// deferred.
func (w *dueWatch) set(next time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.at, w.stale = next, false
}

// wait returns how long an idle loop waits at now (the database's clock):
// pause, or less when a
// deferred task becomes due sooner. Then that due time is used up: the poll
// after it reads NextDue again.
func (w *dueWatch) wait(now time.Time, pause time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.IsZero() || w.at.Sub(now) >= pause {
		return pause
	}
	// The due time and now are on the database's clock (see clock.go), the
	// estimate off by half a round trip at most: a poll that comes a little
	// early finds the time again, and the floor bounds how often.
	in := max(w.at.Sub(now), dueFloor)
	w.at, w.stale = time.Time{}, true
	return in
}
