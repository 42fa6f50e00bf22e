package taskapi

import (
	"context"
	"errors"
)

// The consumer runtime keeps connections of its pool free for its own work
// (heartbeats, settlements) and refuses handlers that would hold more than
// the pool has; PoolSize is how it learns the pool's size from the
// transaction function it is given, which alone knows the pool.

// poolQuestion is the key of the question of PoolSize; its value receives
// the answer.
type poolQuestion struct{}

// errUnanswered is what PoolSize's work returns to a transaction function
// that ran it rather than answer.
var errUnanswered = errors.New("taskapi: the transaction function does not tell its pool's size")

// PoolSize asks transact, a transaction function such as taskpg.Transact or
// taskansi.Transact, how many connections its transactions draw from at
// most, and returns the answer: the pool's limit, or 0 when it has none or
// transact does not tell. A transaction function that knows the question
// answers it with AnswerPoolSize without beginning a transaction; one that
// does not runs the work it is given, which returns at once without a
// statement.
func PoolSize[Tx any](ctx context.Context, transact func(ctx context.Context, fn func(tx Tx) error) error) int {
	size := new(int)
	_ = transact(context.WithValue(ctx, poolQuestion{}, size), func(Tx) error { return errUnanswered })
	return max(*size, 0)
}

// AnswerPoolSize answers the question of PoolSize, when ctx asks it, with
// size, the most connections the caller's transactions draw from (0 for no
// limit), and reports whether ctx asked: a transaction function that
// honours the question calls it first and, when it reports true, returns
// nil without running its work.
func AnswerPoolSize(ctx context.Context, size int) bool {
	answer, ok := ctx.Value(poolQuestion{}).(*int)
	if ok {
		*answer = size
	}
	return ok
}
