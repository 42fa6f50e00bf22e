package taskpg

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Register registers this owner with a fresh heartbeat and reports whether it
// was newly registered.
func (r *Repository) Register(ctx context.Context, db DB) (bool, error) {
	var inserted bool
	if err := db.QueryRow(ctx, r.q.register, r.owner).Scan(&inserted); err != nil {
		return false, wrapf(err, "register owner %q", r.owner)
	}
	return inserted, nil
}

// Heartbeat refreshes this owner's heartbeat.
func (r *Repository) Heartbeat(ctx context.Context, db DB) error {
	tag, err := db.Exec(ctx, r.q.heartbeat, r.owner)
	if err == nil && tag.RowsAffected() == 0 {
		err = taskapi.ErrUnknownOwner
	}
	if err != nil {
		return wrapf(err, "heartbeat of owner %q", r.owner)
	}
	return nil
}

// Owners lists the other owners with a heartbeat within the last duration,
// sorted.
func (r *Repository) Owners(ctx context.Context, db DB, within time.Duration) ([]string, error) {
	if err := check.Duration("within", within); err != nil {
		return nil, wrapf(err, "list owners")
	}
	rows, _ := db.Query(ctx, r.q.owners, r.owner, within.Microseconds())
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapf(err, "list owners")
	}
	slices.Sort(names)
	return names, nil
}

// Expire marks the Active tasks of other owners silent for longer than after
// Expired and returns how many.
func (r *Repository) Expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	return r.execAfter(ctx, db, r.q.expire, "expire tasks", after)
}

// PurgeOwners deletes the other owners silent for longer than after that hold
// no Active task, and returns how many.
func (r *Repository) PurgeOwners(ctx context.Context, db DB, after time.Duration) (int64, error) {
	return r.execAfter(ctx, db, r.q.purgeOwners, "purge owners", after)
}

func (r *Repository) execAfter(ctx context.Context, db DB, query, what string, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "%s", what)
	}
	tag, err := db.Exec(ctx, query, r.owner, after.Microseconds())
	if err != nil {
		return 0, wrapf(err, "%s", what)
	}
	return tag.RowsAffected(), nil
}
