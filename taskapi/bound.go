package taskapi

import (
	"context"
	"time"
)

// A connection that goes silent (packets dropped, sockets open) leaves its
// transaction open on the server, holding its locks, until the server ends
// it: by default only after TCP gives up, hours later. A transaction
// function that honours Bounded, and a Bounder, bound such a transaction
// on the server instead, so that it ends, and lets go of its locks, soon
// after its client went silent. taskproc bounds its own transactions so.

// bounded is the key of the mark of Bounded.
type bounded struct{}

// Bounded returns a context that asks a transaction function (the Transact
// given to taskproc, such as taskpg.Transact) to bound on the server the
// transaction it begins for the work: no statement of it runs longer than
// d, and it does not sit idle between statements longer than d
// (PostgreSQL's statement_timeout and idle_in_transaction_session_timeout,
// set locally: they end with the transaction, also through a pooler in
// transaction mode). A repository call whose statement was stopped so
// fails with SQLSTATE 57014 as ErrUnavailable, and a transaction ended so
// fails its next statement with 25P03, ErrUnavailable too; a statement of
// the caller's own that was stopped is the caller's failure, with no
// sentinel (see taskpg.Transact). A backend whose
// server cannot bound a single transaction (MySQL, SQLite) ignores the
// mark; its server's own settings bound what a silent client holds (see
// docs/operating.md). d below a millisecond is no bound.
func Bounded(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, bounded{}, d)
}

// BoundOf returns the bound that Bounded put on ctx, and false when it put
// none.
func BoundOf(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(bounded{}).(time.Duration)
	return d, ok && d >= time.Millisecond
}

// A Bounder bounds the rest of a transaction that has begun, as Bounded
// bounds one from its start: for a transaction whose first part is the
// caller's own work, which takes the time it takes (a completion
// function), and whose last part is a few statements that must not hold
// their locks for long when the connection goes silent.
type Bounder[Tx any] interface {
	// Bound bounds the rest of tx, a caller's transaction, on the server:
	// no statement runs longer than d, and tx does not sit idle between
	// statements longer than d. It is a no-op where the server cannot
	// bound one transaction (MySQL, SQLite) and on a handle that is not in
	// a transaction; d below a millisecond is ErrInvalidArgument.
	Bound(ctx context.Context, tx Tx, d time.Duration) error
}
