package taskproc

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// How the runtime retries a transaction that the database refused for a
// concurrent one (taskapi.ErrConflict: SQLite BUSY, a MySQL deadlock, a
// PostgreSQL serialization failure).
const (
	// maxAttempts is how often such a transaction is tried at most.
	maxAttempts = 5
	// retryBackoff bounds the random wait before the second attempt; the
	// bound doubles for each one after it.
	retryBackoff = 5 * time.Millisecond
)

// backoff is the jittered, doubling wait between attempts, capped when
// limit is set.
type backoff struct{ bound, limit time.Duration }

func newBackoff() backoff { return backoff{bound: retryBackoff} }

// next returns a random wait below the bound, and doubles the bound.
func (b *backoff) next() time.Duration {
	d := rand.N(b.bound)
	if b.bound *= 2; b.limit > 0 && b.bound > b.limit {
		b.bound = b.limit
	}
	return d
}

// wait sleeps next() and returns ctx's error if ctx ends first.
func (b *backoff) wait(ctx context.Context) error { return sleep(ctx, b.next()) }

// retryConflicts runs fn again while it fails with taskapi.ErrConflict,
// maxAttempts times at most, and returns its last error.
func retryConflicts(ctx context.Context, fn func() error) error {
	b := newBackoff()
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == maxAttempts || !errors.Is(err, taskapi.ErrConflict) {
			return err
		}
		if b.wait(ctx) != nil {
			return err
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
