package taskansi

import (
	"strings"
	"sync"
	"time"
)

// defaultWakeInterval is the interval within which a repository on
// PostgreSQL notifies a topic's channel once (see WithWakeUps), as taskpg's.
const defaultWakeInterval = 2 * time.Millisecond

// wakeUps decides which pushes notify the channel of their topic, on
// PostgreSQL only: the first push of a topic in an interval notifies, the
// others of the interval do not (a leading edge).
type wakeUps struct {
	off      bool
	interval int64           // nanoseconds
	quiet    map[string]bool // topics that never notify
	epoch    time.Time       // the origin of the stamps
	mu       sync.Mutex
	last     map[string]int64 // topic → stamp of the last notifying push
	// pushTopic and notifyingTopic are the statements by which a push
	// locks its topic's row, the second also notifying the topic's
	// channel: in the push's own transaction or savepoint, so that the
	// notification is delivered when the push commits, never when it
	// rolls back.
	pushTopic, notifyingTopic string
}

// newWakeUps returns the wake-ups of a repository of dialect d whose
// queries are q, on the tables of schema (as given).
func newWakeUps(s settings, d *dialect, q queries, schema string) *wakeUps {
	w := &wakeUps{
		off: s.wakeOff || !d.partitioned, interval: int64(s.wakeInterval), quiet: map[string]bool{},
		epoch: time.Now(), last: map[string]int64{}, pushTopic: q.pushTopic,
	}
	for _, topic := range s.quiet {
		w.quiet[topic] = true
	}
	literal := "'" + strings.ReplaceAll(tasksChannel(schema), "'", "''") + "'"
	w.notifyingTopic = strings.Replace(q.pushTopic, topicCheck, topicCheck+" AND pg_notify("+literal+", topic) IS NOT NULL", 1)
	return w
}

// topicCheck is the condition by which a push finds its topic's row; the
// notification is added to it, so that a push to an unknown topic notifies
// nothing.
const topicCheck = "WHERE topic = ?"

// topicStatement returns the statement that locks the topic of a push that
// notifies or not.
func (w *wakeUps) topicStatement(notify bool) string {
	if notify {
		return w.notifyingTopic
	}
	return w.pushTopic
}

// claim tells whether a push to topic is the first of its interval, and
// then notifies: it returns the push's stamp, 0 when it does not notify.
// Of concurrent first pushes, one notifies.
func (w *wakeUps) claim(topic string) int64 {
	if w.off || w.quiet[topic] {
		return 0
	}
	now := int64(time.Since(w.epoch)) + 1 // never 0
	if w.interval == 0 {
		return now
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prior, ok := w.last[topic]; ok && now-prior < w.interval {
		return 0
	}
	w.last[topic] = now
	return now
}

// forget gives the interval back after a push that claimed it failed, so
// that the next push of the topic notifies.
func (w *wakeUps) forget(topic string, stamp int64) {
	if stamp == 0 || w.interval == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last[topic] == stamp {
		delete(w.last, topic)
	}
}
