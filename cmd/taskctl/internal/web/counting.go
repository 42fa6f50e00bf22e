package web

import (
	"context"
	"sync"
	"time"
)

// A results window beyond the sampler's memory is counted in the
// database: Results reads the completions of every topic, which at a
// thousand topics takes longer than a page may take to answer. So the
// page does not wait for it. The first request of a window starts the
// count in the background and answers at once that it is counting, and
// the page reloads itself every second (a meta refresh: no script) until
// the count is there. A count is kept for countKeep after it ends, so that
// the reload shows it and anyone asking for the same window meanwhile gets
// the same figures. At most countsAtOnce counts run at once.

const (
	countKeep    = time.Minute
	countsAtOnce = 2
)

// dbCount is the count of one window in the database.
type dbCount struct {
	from, to time.Time
	started  time.Time
	ended    time.Time // zero while counting
	done     map[string]byResult
	err      error
}

// dbCounts are the counts of windows, by the window as the request gave it
// (since and until, as text, so that "the last 48 hours" asked again while
// its count runs is that count).
type dbCounts struct {
	store Store
	mu    sync.Mutex
	ctx   context.Context // ends when the server stops; nil before it serves
	wg    sync.WaitGroup
	byKey map[string]*dbCount
}

func newDBCounts(store Store) *dbCounts {
	return &dbCounts{store: store, byKey: map[string]*dbCount{}}
}

// start lets counts run until ctx ends.
func (c *dbCounts) start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
}

// wait waits for the counts under way, which end with the server's
// context.
func (c *dbCounts) wait() { c.wg.Wait() }

// count returns the count of the window named key, [from, to], starting
// it when there is none: a copy, ended or not. ok is false when too many
// counts run to start another one.
func (c *dbCounts) count(key string, from, to time.Time) (dbCount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	running := 0
	for k, n := range c.byKey {
		switch {
		case n.ended.IsZero():
			running++
		case now.Sub(n.ended) > countKeep:
			delete(c.byKey, k)
		}
	}
	if n, ok := c.byKey[key]; ok {
		return *n, true
	}
	if running >= countsAtOnce || c.ctx == nil || c.ctx.Err() != nil {
		return dbCount{}, false
	}
	n := &dbCount{from: from, to: to, started: now}
	c.byKey[key] = n
	c.wg.Go(func() { c.run(n) })
	return *n, true
}

// run counts n in the database.
func (c *dbCounts) run(n *dbCount) {
	done, err := c.store.Results(c.ctx, n.from, n.to)
	c.mu.Lock()
	defer c.mu.Unlock()
	n.done, n.err, n.ended = countsOf(done), err, time.Now()
}
