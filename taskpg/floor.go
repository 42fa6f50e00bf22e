package taskpg

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The floor of a topic's polls. Every task that a poll takes leaves an
// entry in the index of Ready tasks (task_ready) that no poll can use
// again, and until a vacuum removes it, every poll walks over it: a poll of
// 500 read 1,161 index pages after 300,000 tasks were consumed, against 10
// (docs/performance.md). A floor lets a busy consumer start past them.
//
// The floor is a sequence at or below which no task that was never deferred
// is Ready, but for those that came back. A poll that took tasks knows the
// highest sequence it took from the index (last) and its transaction id
// (xid): every task below last that it could see, it took. One it could not
// see is a push still open, which drew its sequence before the push of
// last committed, so before the poll began, and held a transaction id from
// its first row on, lower than the poll's. Once a later poll's snapshot
// has no transaction open below xid (its xmin is above), every such push
// has ended, and last is the floor.
//
// Tasks come back to Ready below the floor when they are released,
// revived or joined, when Defer clears their time, when a concurrent poll
// that had locked them rolls back or took others instead (those of its
// branch of deferred tasks), when a failover loses the claim that took
// them, or when a push drew its sequence before its first
// row gave it a transaction id (a plain INSERT of the caller's). The
// repository's own calls of the first kind reset the floor of their topic;
// the others are taken by the polls from the index's start, which keep
// coming: every floorEvery, and at once when a poll from the floor took
// nothing. So such a task waits at most floorEvery behind newer ones, and
// only while the consumer is busy.
//
// The floor is used only where it pays and is safe to use: in taskpg's own
// round trips, by plain polls in FIFO order without a condition or a term,
// once a consumer took floorStreak tasks without an empty poll.
const (
	floorStreak = 1000                   // tasks taken without an empty poll before a poll starts from the floor
	floorEvery  = 100 * time.Millisecond // the longest time between two polls from the index's start while busy
	floorClaims = 64                     // polls that took tasks, kept until the pushes open at their time have ended
)

// floor is what a repository knows about a topic's Ready index.
type floor struct {
	mu      sync.Mutex
	at      int64       // polls may start past it
	pending []floorMark // polls that took tasks, waiting for the pushes open at their time
	streak  int         // tasks taken since the last poll that took none
	full    time.Time   // when the last poll from the index's start began
}

// floorMark is what a poll reports for the floor (floorMarker).
type floorMark struct {
	xid  uint64 // the poll's transaction id, 0 when it took no task
	xmin uint64 // the oldest transaction open at its snapshot
	last int64  // the highest sequence it took from the Ready index, 0 for none
}

// floorOf returns the floor of topic.
func (r *Repository) floorOf(topic string) *floor {
	if f, ok := r.floors.Load(topic); ok {
		return f.(*floor)
	}
	f, _ := r.floors.LoadOrStore(topic, &floor{})
	return f.(*floor)
}

// rewound says that tasks of topic came back to Ready through this
// repository: its next polls start from the index's start.
func (r *Repository) rewound(topic string) {
	if f, ok := r.floors.Load(topic); ok {
		f := f.(*floor)
		f.mu.Lock()
		f.streak = 0
		f.mu.Unlock()
	}
}

// start returns the sequence that a poll at now starts past: the floor while
// a streak lasts and a poll from the start began within every, 0 otherwise.
func (f *floor) start(now time.Time, streak int, every time.Duration) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at > 0 && f.streak >= streak && now.Sub(f.full) < every {
		return f.at
	}
	return 0
}

// record takes what a poll that began at now from start reported: how
// many tasks it took and its mark.
func (f *floor) record(now time.Time, start int64, took int, m floorMark) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streak += took
	if took == 0 {
		f.streak = 0
	}
	if start == 0 {
		f.full = now
	}
	if m.xid != 0 && m.last > 0 {
		if len(f.pending) == floorClaims { // the oldest claim gives way
			f.pending = f.pending[1:]
		}
		f.pending = append(f.pending, m)
	}
	kept := f.pending[:0]
	for _, c := range f.pending {
		if c.xid < m.xmin {
			f.at = max(f.at, c.last)
		} else {
			kept = append(kept, c)
		}
	}
	f.pending = kept
}

// readMark reads the marker row t of a floored poll into mark, if any: its
// identifier is the transaction id (empty for none), its input the xmin and
// the last sequence.
func readMark(mark *floorMark, t taskapi.Task) error {
	if mark == nil {
		return nil
	}
	var err error
	if t.Identifier != "" {
		mark.xid, err = strconv.ParseUint(t.Identifier, 10, 64)
	}
	xmin, last, _ := strings.Cut(t.Input, " ")
	if err == nil {
		mark.xmin, err = strconv.ParseUint(xmin, 10, 64)
	}
	if err == nil {
		mark.last, err = strconv.ParseInt(last, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("the floor's mark %q %q: %w", t.Identifier, t.Input, err)
	}
	return nil
}
