// Package edge decides which pushes notify their topic's channel, shared by
// taskpg and taskansi: the first push of a topic in an interval notifies,
// the others of the interval do not (a leading edge).
package edge

import (
	"sync"
	"time"
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
// Of concurrent first pushes, one notifies.
func (e *Edge) Claim(topic string) int64 {
	if e.off || e.quiet[topic] {
		return 0
	}
	now := int64(time.Since(e.epoch)) + 1 // never 0
	if e.interval == 0 {
		return now
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prior, ok := e.last[topic]; ok && now-prior < e.interval {
		return 0
	}
	e.last[topic] = now
	return now
}

// Forget gives the interval back after a push that claimed it failed, so
// that the next push of the topic notifies.
func (e *Edge) Forget(topic string, stamp int64) {
	if stamp == 0 || e.interval == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last[topic] == stamp {
		delete(e.last, topic)
	}
}
