package taskapi

import (
	"context"
	"errors"
)

// ErrCancelled is the cause (context.Cause) of the context of a task's
// handler when the task was cancelled while it ran, and the error of a
// settlement that found every task of its batch cancelled. It is not a
// sentinel of a repository call: cancelling a task that has ended is not
// an error, it is not cancelled.
var ErrCancelled = errors.New("task cancelled")

// Canceller ends tasks before they run, or while they run: a tenant's work
// whose caller went away. A cancelled task is Cancelled, for good: it is
// never polled, retried or revived again, its output says it was
// cancelled (CancelOutput), and its Completed time is the cancellation's.
//
// A Ready task (deferred ones included) ends at once, and so does a
// Suspended one that Cancel names: no junction, revival or reassignment
// moves it then. Failed and the other completed states have ended and
// are left as they are. An Active task ends at once too: its owner's
// completion, release or failure of it is refused from then on
// (ErrNotActive), so that whatever its handler does next, the task's one
// result is Cancelled; its Active slot under Limits is free at once. The
// owner learns of it by Cancelled: taskproc asks at each reconciliation,
// and on PostgreSQL at once, as Cancel notifies the topic's control
// channel (taskpg.ActivationChannel) when it cancels Active tasks.
type Canceller[Tx any] interface {
	// Cancel cancels the tasks of topic with the given sequences that are
	// Ready, Active or Suspended, and returns them; a task in any other
	// state, or not in the topic, is left as it is and not returned.
	// reason, which may be empty, goes into the tasks' output.
	// ErrUnknownTopic when topic is not registered; ErrInvalidArgument for
	// a bad topic name or a reason that is not valid text (invalid UTF-8,
	// a NUL byte).
	Cancel(ctx context.Context, tx Tx, topic, reason string, sequences ...int64) ([]Cancellation, error)
	// CancelIdentifier cancels every Ready task of identifier in topic,
	// deferred ones included, and returns them; its Active tasks run on
	// (cancel them by sequence). Errors as for Cancel, and
	// ErrInvalidArgument for a bad identifier.
	CancelIdentifier(ctx context.Context, tx Tx, topic, identifier, reason string) ([]Cancellation, error)
	// Cancelled returns which of the given tasks of topic are Cancelled,
	// ascending: how an owner finds that tasks it runs were cancelled.
	Cancelled(ctx context.Context, tx Tx, topic string, sequences ...int64) ([]int64, error)
}

// Cancellation is a task that Cancel or CancelIdentifier cancelled.
type Cancellation struct {
	Task Task
	// From is the state the task was cancelled from: Ready, Active or
	// Suspended.
	From State
	// Owner is the owner that was running the task, which Cancel tells;
	// empty for a task that was Ready.
	Owner string
}

// CancelOutput returns the output of a task cancelled for reason:
// "cancelled", or "cancelled: " and the reason.
func CancelOutput(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return "cancelled: " + reason
}
