package taskapi

import (
	"context"
	"time"
)

// OwnerStatus is what the database knows of one registered owner.
type OwnerStatus struct {
	// Owner is the owner's name.
	Owner string
	// Heartbeat is the owner's last heartbeat (or registration), on the
	// database clock, in UTC.
	Heartbeat time.Time
	// Held counts the owner's Active tasks per topic; nil when it holds
	// none.
	Held map[string]int64
}

// Roster lists the owners for operators: who is registered, when each last
// sent a heartbeat, and which tasks each holds. (An addition to the
// original contract; taskpg's and taskansi's repositories implement it.)
type Roster[Tx any] interface {
	// Roster returns every registered owner, this one included, sorted by
	// name in byte order, each with its heartbeat and its Active tasks per
	// topic. It reads the owners' table and the index of Active tasks by
	// owner, never the whole task table; on PostgreSQL it visits only the
	// topics in which owners polled, a few dozen at a time.
	Roster(ctx context.Context, tx Tx) ([]OwnerStatus, error)
}
