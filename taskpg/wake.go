package taskpg

import (
	"strings"
	"sync"
	"time"
)

// defaultWakeInterval is the interval within which a repository notifies a
// topic's channel once (see WithWakeUps). NOTIFY serializes the commits that
// notify on a lock of the whole server, held through the commit's flush; at
// most one such commit per topic in this interval leaves the others to
// commit in groups, and a single push costs the same as without wake-ups.
const defaultWakeInterval = 2 * time.Millisecond

// wakeUps decides which pushes notify the channel of their topic, and holds
// the push statements that do: the first push of a topic in an interval
// notifies, the others of the interval do not (a leading edge).
type wakeUps struct {
	off      bool
	interval int64           // nanoseconds
	quiet    map[string]bool // topics that never notify
	epoch    time.Time       // the origin of the stamps
	mu       sync.Mutex
	last     map[string]int64 // topic → stamp of the last notifying push
	// plain and notifying are the push statements without and with the
	// notification.
	plain, notifying pushStatements
}

// pushStatements are the statements of Push. The notifying ones call
// pg_notify in the statement that stores the tasks (or that draws their
// sequences, for COPY): the notification goes in the same round trip and
// is delivered when the push's transaction commits, never when it rolls
// back.
type pushStatements struct {
	push                  [4]string // by Insertion
	pushOne, pushOneAlone string
	pushSequences         string
}

// newWakeUps returns the wake-ups of a repository whose queries are q, on
// the tables of schema (as given).
func newWakeUps(s settings, q queries, schema string) *wakeUps {
	w := &wakeUps{off: s.wakeOff, interval: int64(s.wakeInterval), quiet: map[string]bool{}, epoch: time.Now(), last: map[string]int64{}}
	for _, topic := range s.quiet {
		w.quiet[topic] = true
	}
	w.plain = pushStatements{push: q.push, pushOne: q.pushOne, pushOneAlone: q.pushOneAlone, pushSequences: q.pushSequences}
	notify := notifying(TasksChannel(schema))
	for i, statement := range q.push {
		if statement != "" {
			w.notifying.push[i] = notify(statement)
		}
	}
	// pushOneAlone has no topic check to hang the notification on: the
	// notifying push of one task checks the topic as pushOne does, which
	// costs little at one push per topic and interval.
	w.notifying.pushOne = notify(q.pushOne)
	w.notifying.pushOneAlone = w.notifying.pushOne
	w.notifying.pushSequences = notify(q.pushSequences)
	return w
}

// topicCheck is the condition by which every push statement finds its
// topic's row (the topic itself is $1); notifying adds the notification to
// it, so that a push to an unknown topic notifies nothing.
const topicCheck = ".task_topic WHERE topic = $1"

// notifying returns a function that turns a push statement into one that
// also notifies channel with the topic, once, when the topic exists.
func notifying(channel string) func(statement string) string {
	literal := "'" + strings.ReplaceAll(channel, "'", "''") + "'"
	return func(statement string) string {
		return strings.Replace(statement, topicCheck, topicCheck+" AND pg_notify("+literal+", topic) IS NOT NULL", 1)
	}
}

// statements returns the push statements of a push that notifies or not.
func (w *wakeUps) statements(notify bool) *pushStatements {
	if notify {
		return &w.notifying
	}
	return &w.plain
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
