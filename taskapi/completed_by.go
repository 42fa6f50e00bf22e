package taskapi

import (
	"context"
	"time"
)

// CompletionBounded bounds an operator's bulk changes by time as well as by
// sequence, so that a change made after a confirmation changes no more
// than the confirmation showed. A task pushed since has a higher sequence
// than the confirmation saw, and the span leaves it out; a task completed
// since has a later completion time than the confirmation, and completedBy
// leaves it out. A task with no completion time (Ready, Active, Expired)
// is bounded by the span alone. A zero completedBy leaves out nothing: the
// methods are then Revive, ReassignAll and Purge. completedBy is on the
// database clock (see Clock).
type CompletionBounded[Tx any] interface {
	// ReviveCompletedBy is Revive of the tasks completed at or before completedBy.
	ReviveCompletedBy(ctx context.Context, tx Tx, topic string, how Revivification, state State, span Range, completedBy time.Time, size int) ([]Revival, error)
	// ReassignCompletedBy is ReassignAll of the tasks completed at or before
	// completedBy.
	ReassignCompletedBy(ctx context.Context, tx Tx, topic string, from State, to Result, span Range, completedBy time.Time) (int64, error)
	// PurgeCompletedBy is Purge of the tasks completed at or before completedBy.
	PurgeCompletedBy(ctx context.Context, tx Tx, topic string, span Range, completedBy time.Time, states ...State) (int64, error)
}
