package taskapi

import (
	"context"
	"time"
)

// AuditEntry is one operator action in the audit log: who changed what,
// within which bound, how many tasks it changed, and when. Reads are
// never recorded.
type AuditEntry struct {
	// ID numbers the entry, assigned by the database when it is recorded:
	// later entries have higher IDs. It is the cursor of AuditLog.
	ID int64
	// At is when the entry was recorded, on the database clock (on
	// SQLite the process's, as every time taskansi writes there), in
	// UTC; set by Record.
	At time.Time
	// Actor is who acted: the dashboard session's label, or the user of
	// the operating system for a command (at most MaxActorLength bytes).
	Actor string
	// Origin is where the action came from, such as "dashboard" or "cli"
	// (at most MaxOriginLength bytes).
	Origin string
	// Action names the action, such as "purge" or "activation" (at most
	// MaxActionLength bytes).
	Action string
	// Params are the action's parameters as a JSON object, such as
	// {"topic":["orders"],"state":["FAILED"]}; empty for none.
	Params string
	// Bound is the bound the action was confirmed with, as text (the
	// highest sequence seen and the time, say); empty for none.
	Bound string
	// Changed counts what the action changed: tasks, or topics for an
	// action on topics, or owners for a purge of owners. Never negative.
	Changed int64
	// Outcome says in words what the action did, or where it stopped.
	Outcome string
}

// The limits of an AuditEntry's names; Params, Bound and Outcome are free
// text.
const (
	MaxActorLength  = 250 // AuditEntry.Actor, as an owner name
	MaxOriginLength = 50  // AuditEntry.Origin
	MaxActionLength = 50  // AuditEntry.Action
)

// MaxAuditPage is the most entries that one AuditLog call returns.
const MaxAuditPage = 1000

// Auditor keeps the audit log of operator actions, in the database, so
// that every process that changes things (the dashboard, taskctl) writes
// to one log that a read-only role may read. (An addition to the original
// contract; taskpg's and taskansi's repositories implement it.)
type Auditor[Tx any] interface {
	// Record appends entry to the log and returns it with its ID and time
	// (the database's, in UTC; the entry's own ID and At are ignored). An
	// entry without Actor, Origin or Action, with a name over its limit,
	// a NUL byte or invalid UTF-8 anywhere, Params that are not a JSON
	// object, or a negative Changed is ErrInvalidArgument, and nothing is
	// recorded.
	Record(ctx context.Context, tx Tx, entry AuditEntry) (AuditEntry, error)
	// AuditLog returns up to limit entries with an ID below before (every
	// entry when before is zero), newest first: the next page is the one
	// before the last ID returned. A limit below one returns nothing; a
	// limit over MaxAuditPage or a negative before is ErrInvalidArgument.
	AuditLog(ctx context.Context, tx Tx, before int64, limit int) ([]AuditEntry, error)
}
