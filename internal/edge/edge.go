// Package edge decides which pushes notify their topic's channel, and names
// the channels, for taskpg and taskansi: the first push of a topic in an
// interval notifies, the others of the interval do not (a leading edge).
package edge

import (
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Edge is the leading edge of the pushes of every topic. The zero value is
// not usable; see New.
type Edge struct {
	off      bool
	interval int64           // nanoseconds
	quiet    map[string]bool // topics that never notify
	epoch    time.Time       // the origin of the stamps
	mu       sync.Mutex
	last     map[string]int64 // topic → stamp of the last notifying push
}

// New returns an Edge that notifies once per interval and topic (every push
// when interval is 0), never when off, and never for the quiet topics.
func New(off bool, interval time.Duration, quiet []string) *Edge {
	e := &Edge{off: off, interval: int64(interval), quiet: map[string]bool{}, epoch: time.Now(), last: map[string]int64{}}
	for _, topic := range quiet {
		e.quiet[topic] = true
	}
	return e
}

// Claim tells whether a push to topic is the first of its interval, and
// then notifies: it returns the push's stamp, 0 when it does not notify.
// Of concurrent first pushes, one notifies. Pushes of deferred tasks
// (deferred) have intervals of their own, since they notify a channel of
// their own (DueBase): a push of ready tasks never silences one that may
// change when the topic's next task is due.
func (e *Edge) Claim(topic string, deferred bool) int64 {
	if e.off || e.quiet[topic] {
		return 0
	}
	now := int64(time.Since(e.epoch)) + 1 // never 0
	if e.interval == 0 {
		return now
	}
	key := edgeKey(topic, deferred)
	e.mu.Lock()
	defer e.mu.Unlock()
	if prior, ok := e.last[key]; ok && now-prior < e.interval {
		return 0
	}
	e.last[key] = now
	return now
}

// Forget gives the interval back after a push that claimed it failed, so
// that the next push of the topic notifies.
func (e *Edge) Forget(topic string, deferred bool, stamp int64) {
	if stamp == 0 || e.interval == 0 {
		return
	}
	key := edgeKey(topic, deferred)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last[key] == stamp {
		delete(e.last, key)
	}
}

// edgeKey is the key of the interval of a topic's pushes: the topic, after
// a NUL for deferred pushes (no topic holds a NUL).
func edgeKey(topic string, deferred bool) string {
	if deferred {
		return "\x00" + topic
	}
	return topic
}

// Deferred reports whether a push of creations notifies the channel of
// deferred tasks (DueBase): whether any has a not-before time, past or to
// come, so that consumers read when their topic's next task is due.
func Deferred(creations []taskapi.Creation) bool {
	for _, c := range creations {
		if !c.NotBefore.IsZero() {
			return true
		}
	}
	return false
}
