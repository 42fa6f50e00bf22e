package web

import "context"

// Pages filtered by state or by a window of creation times read an index
// each, cheaply, but many of them at once (an operator's tabs, a script)
// still take every connection of the pool and the database's cores, and
// the other pages, a task's, the overview's, an unfiltered topic's, would
// wait behind them: 30 at once made unrelated pages take seconds. A gate
// lets Config.FilteredPages of them read at once; the others wait for
// their turn within their read timeout (deadline.go), and the rest of the
// pool stays free for the other pages.

// gate admits a bounded number of readers at once.
type gate chan struct{}

// newGate returns a gate of n places (at least one).
func newGate(n int) gate { return make(gate, max(n, 1)) }

// enter waits for a place until ctx ends, and returns the function that
// gives it back.
func (g gate) enter(ctx context.Context) (leave func(), err error) {
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
