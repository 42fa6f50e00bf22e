package taskproc

import (
	"context"
	"sync"
	"time"
)

// A Notifier tells a Client when topics got new tasks or had their
// activation changed, so that it acts at once instead of at its next poll
// or reconciliation. taskpg.NewNotifier listens on PostgreSQL; polling
// every pause stays the correctness path, a notification is a hint.
type Notifier interface {
	// Listen calls wake with the topics that got new ready tasks, deferred
	// with the topics that got deferred tasks (a not-before time, past or
	// to come), and activated with the topics whose activation changed,
	// until ctx ends; then it returns ctx's error. A Manager woken through
	// deferred also reads when its topic's next task is due; one woken
	// through wake need not, which saves two statements per wake-up. When
	// notifications may have been lost (a connection that dropped and came
	// back), it calls each with no topics, which stands for every topic.
	// lost is called with each error Listen meets and recovers from. The
	// callbacks are called from Listen's goroutine and must return quickly.
	Listen(ctx context.Context, wake, deferred, activated func(topics []string), lost func(err error)) error
}

// waker wakes a Client's Managers on notifications, per topic on the
// leading edge: the first notification of a topic wakes its Manager at
// once, the ones that follow within the window coalesce into one wake-up
// at the window's end.
type waker struct {
	resume func(topics ...string)
	window time.Duration

	mu      sync.Mutex
	last    map[string]time.Time
	pending map[string]*time.Timer
	stopped bool
}

func newWaker(resume func(topics ...string), window time.Duration) *waker {
	return &waker{resume: resume, window: window, last: map[string]time.Time{}, pending: map[string]*time.Timer{}}
}

// wake wakes the Managers of topics, every Manager for none.
func (w *waker) wake(topics []string) {
	if len(topics) == 0 {
		w.resume()
		return
	}
	var now []string
	w.mu.Lock()
	for _, topic := range topics {
		if w.stopped || w.pending[topic] != nil {
			continue // a trailing wake-up comes
		}
		if since := time.Since(w.last[topic]); since < w.window {
			w.pending[topic] = time.AfterFunc(w.window-since, func() { w.trail(topic) })
			continue
		}
		w.last[topic] = time.Now()
		now = append(now, topic)
	}
	w.mu.Unlock()
	if len(now) > 0 {
		w.resume(now...)
	}
}

// trail is the wake-up at the end of a window.
func (w *waker) trail(topic string) {
	w.mu.Lock()
	delete(w.pending, topic)
	stopped := w.stopped
	w.last[topic] = time.Now()
	w.mu.Unlock()
	if !stopped {
		w.resume(topic)
	}
}

// stop cancels the trailing wake-ups to come.
func (w *waker) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for topic, t := range w.pending {
		t.Stop()
		delete(w.pending, topic)
	}
}
