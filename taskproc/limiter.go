package taskproc

import (
	"context"
	"errors"
)

// ErrQueueFull is the error of a Limiter that refuses to queue a waiter:
// a TopicLimiter when as many acquirers of a topic wait as its queue holds. A
// Manager that meets it waits its pause and polls again.
var ErrQueueFull = errors.New("taskproc: limiter queue full")

// A Limiter bounds how many batches run at once. A Manager acquires a slot
// before each poll and holds it until the batch it polled is settled (or
// gives it back at once when the poll found nothing), so that one limiter
// shared by several topics bounds the batches in flight across them.
type Limiter interface {
	// Acquire waits for a slot for topic and returns the function that
	// gives it back; calling that function more than once gives it back
	// once. When ctx ends first, Acquire returns ctx.Err() and holds no
	// slot. A limiter that refuses to queue returns ErrQueueFull at once.
	Acquire(ctx context.Context, topic string) (release func(), err error)
}

// unlimited is the Limiter of a topic without WithLimiter: it never waits.
type unlimited struct{}

func (unlimited) Acquire(ctx context.Context, _ string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func() {}, nil
}
