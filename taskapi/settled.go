package taskapi

import (
	"context"
	"time"
)

// Settler bounds an operator's bulk changes by time as well as by
// sequence, so that a change made after a confirmation changes no more
// than the confirmation showed. A task pushed since has a higher sequence
// than the confirmation saw, and the span leaves it out; a task completed
// since has a later completion time than the confirmation, and settled
// leaves it out. A task with no completion time (Ready, Active, Expired)
// is bounded by the span alone. A zero settled leaves out nothing: the
// methods are then Revive, ReassignAll and Purge. settled is on the
// database clock (see Clock).
type Settler[Tx any] interface {
	// ReviveSettled is Revive of the tasks completed at or before settled.
	ReviveSettled(ctx context.Context, tx Tx, topic string, how Revivification, state State, span Range, settled time.Time, size int) ([]Revival, error)
	// ReassignSettled is ReassignAll of the tasks completed at or before
	// settled.
	ReassignSettled(ctx context.Context, tx Tx, topic string, from State, to Result, span Range, settled time.Time) (int64, error)
	// PurgeSettled is Purge of the tasks completed at or before settled.
	PurgeSettled(ctx context.Context, tx Tx, topic string, span Range, settled time.Time, states ...State) (int64, error)
}
