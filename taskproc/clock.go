package taskproc

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Times that come from the database (when a deferred task is due) and
// times the runtime writes for the database to compare (when a retried or
// snoozed task is due) are on the database's clock, which may run apart
// from the process's. The runtime measures the difference with a reading
// of the database's clock (taskapi.Clock) in the transactions that need
// it, which it sends anyway: a poll that reads when the next deferred task
// is due, a completion that retries or snoozes tasks. It takes the middle
// of the reading's round trip as its moment, so the estimate is off by at
// most half a round trip; and it waits for the database's times on the
// database's clock so estimated. The Managers of a Client share one
// measure.

// clockTick is how often a wait for a time of a clock given with WithClock
// reads that clock again: such a clock moves as a test moves it, not as
// timers run.
const clockTick = 5 * time.Millisecond

// clockOffset is how far the database's clock is ahead of the process's,
// as last measured (zero before).
type clockOffset struct{ ns atomic.Int64 }

func (o *clockOffset) get() time.Duration { return time.Duration(o.ns.Load()) }

// measureClock reads the database's clock in tx through repo, when repo has
// one, and records the offset in o.
func measureClock[Tx any](ctx context.Context, tx Tx, repo Repository[Tx], o *clockOffset) error {
	clock, ok := repo.(taskapi.Clock[Tx])
	if !ok {
		return nil
	}
	before := time.Now()
	db, err := clock.Now(ctx, tx)
	if err != nil {
		return err
	}
	mid := before.Add(time.Since(before) / 2)
	o.ns.Store(int64(db.Sub(mid.Round(0)))) // Round(0): the wall clock, which the database's is compared with
	return nil
}
