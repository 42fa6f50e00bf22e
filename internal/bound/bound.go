// Package bound holds what taskpg and taskansi do alike to honour
// taskapi.Bounded and taskapi.Bounder: the statements that bound a
// transaction on a PostgreSQL server, and the patience of the statements
// that end one.
package bound

import (
	"context"
	"strconv"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Refused returns why a Bounder may not bound a transaction to d: d is
// below a millisecond (ErrInvalidArgument), or ctx is done, for a call
// given up on does nothing, also where it would send nothing. nil else.
func Refused(ctx context.Context, d time.Duration) error {
	if err := check.Bound(d); err != nil {
		return err
	}
	return ctx.Err()
}

// Postgres returns the statements that bound the transaction under way to
// d: no statement runs longer than d, and the transaction does not sit
// idle between statements longer than d (statement_timeout and
// idle_in_transaction_session_timeout, SET LOCAL, so that they end with
// the transaction, also through a pooler in transaction mode). The values
// are whole milliseconds, at least one: numbers that the statements carry
// as text, so that they need no arguments and fit in the round trip of a
// BEGIN.
func Postgres(d time.Duration) string {
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	return "SET LOCAL statement_timeout = " + ms + "; SET LOCAL idle_in_transaction_session_timeout = " + ms
}

// Finishing returns the context of the statements that end a call's own
// transaction or savepoint (COMMIT, RELEASE, ROLLBACK): they run even once
// ctx is done, so that a call never leaves half of its work behind, for
// at most patience, or the bound of ctx (taskapi.Bounded) when that is
// shorter: waiting longer than the runtime's bound on a connection that
// went silent holds a task for nothing.
func Finishing(ctx context.Context, patience time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := taskapi.BoundOf(ctx); ok {
		patience = min(patience, d)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), patience)
}
