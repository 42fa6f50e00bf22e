package taskproc

import (
	"context"
	"slices"
	"sync"
)

// Chain returns a Limiter that acquires a slot of each of limiters in
// order and gives them back in reverse order. When one of them fails, the
// slots already acquired are given back before Acquire returns its error.
// A Chain of no limiters never waits.
func Chain(limiters ...Limiter) Limiter { return chain(slices.Clone(limiters)) }

// chain is the Limiter returned by Chain.
type chain []Limiter

func (c chain) Acquire(ctx context.Context, topic string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	releases := make([]func(), 0, len(c))
	for _, l := range c {
		release, err := l.Acquire(ctx, topic)
		if err != nil {
			releaseAll(releases)
			return nil, err
		}
		releases = append(releases, release)
	}
	return sync.OnceFunc(func() { releaseAll(releases) }), nil
}

// releaseAll calls releases from last to first.
func releaseAll(releases []func()) {
	for _, release := range slices.Backward(releases) {
		release()
	}
}
