package taskproc

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Repository is what the runtime needs of a task repository for the owner it
// polls as. *taskpg.Repository and *taskansi.Repository satisfy it.
type Repository[Tx any] interface {
	taskapi.Sink[Tx]
	taskapi.Source[Tx]
	taskapi.Releaser[Tx]
	taskapi.Juncture[Tx]
	// Owner returns the name of the owner.
	Owner() string
	// Register registers the owner; a Client does it when it starts.
	Register(ctx context.Context, tx Tx) (bool, error)
	// Heartbeat refreshes the owner's heartbeat; a Client does it every
	// heartbeat interval (WithHeartbeat).
	Heartbeat(ctx context.Context, tx Tx) error
	// Expire, PurgeOwners and Reassign serve the keeper (Reassign ends a
	// task rescued too often).
	Expire(ctx context.Context, tx Tx, after time.Duration) (int64, error)
	PurgeOwners(ctx context.Context, tx Tx, after time.Duration) (int64, error)
	Reassign(ctx context.Context, tx Tx, topic string, assignments ...taskapi.Assignment) error
	// Topics serves Start, which refuses a topic that is not registered.
	Topics(ctx context.Context, tx Tx) ([]string, error)
	// Lookup, ReviveTasks and Defer serve retries and snoozes (see
	// RetryPolicy) and the keeper's rescues, NextDue the wake-up for
	// deferred tasks.
	Lookup(ctx context.Context, tx Tx, topic string, sequence int64) (taskapi.Info, bool, error)
	ReviveTasks(ctx context.Context, tx Tx, topic string, how taskapi.Revivification, tasks ...taskapi.Task) ([]taskapi.Revival, error)
	Defer(ctx context.Context, tx Tx, topic string, until time.Time, tasks ...taskapi.Task) error
	NextDue(ctx context.Context, tx Tx, topic string) (time.Time, error)
	// Mark and Advance serve Schedules.
	taskapi.Scheduler[Tx]
	// Count and Page serve Manager.Gauge.
	Count(ctx context.Context, tx Tx, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error)
	Page(ctx context.Context, tx Tx, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error)
}

// Transact runs fn in a transaction: it commits when fn returns nil, rolls
// back otherwise, and returns fn's error or the commit's. The runtime polls,
// completes and fails batches through it, each in a transaction of its own.
// taskpg.Transact and taskansi.Transact return one over a pool.
type Transact[Tx any] func(ctx context.Context, fn func(tx Tx) error) error
