package taskansi

import (
	"context"
	"time"
)

// defaultPollInterval is the interval of a PollNotifier made with a
// non-positive one.
const defaultPollInterval = time.Second

// A PollNotifier wakes the consumer runtime at an interval: it implements
// taskproc.Notifier without any channel of the database. On SQLite and MySQL
// this is what reaches every process: consumers find the tasks that other
// processes pushed, and the activation changes they made, by polling and
// reconciliation, no sooner than the next pause or interval. On PostgreSQL,
// pushes of taskansi notify as taskpg's do, and taskpg's Notifier hears
// them at once.
type PollNotifier struct {
	interval time.Duration
}

// NewPollNotifier returns a PollNotifier that wakes every interval (a
// second when interval is not positive).
func NewPollNotifier(interval time.Duration) *PollNotifier {
	if interval <= 0 {
		interval = defaultPollInterval
	}
	return &PollNotifier{interval: interval}
}

// Listen calls activated(nil), deferred(nil) and wake(nil), which stand for
// every topic, every interval until ctx ends, and then returns ctx.Err().
// It never calls lost: it has nothing to lose. Nil callbacks are skipped.
func (p *PollNotifier) Listen(ctx context.Context, wake, deferred, activated func(topics []string), lost func(err error)) error {
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		for _, every := range []func([]string){activated, deferred, wake} {
			if every != nil {
				every(nil)
			}
		}
	}
}
