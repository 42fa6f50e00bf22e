package taskansi

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
)

// Register registers this owner with a fresh heartbeat and reports whether it
// was newly registered.
func (r *Repository) Register(ctx context.Context, db DB) (bool, error) {
	var inserted bool
	err := r.atomic(ctx, db, func(tx DB) error {
		n, err := affected(tx.ExecContext(ctx, r.expand(r.q.register), r.owner))
		if inserted = n > 0; inserted || err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, r.expand(r.q.heartbeat), r.owner)
		return err
	})
	if err != nil {
		return false, wrapf(err, "register owner %q", r.owner)
	}
	return inserted, nil
}

// Heartbeat refreshes this owner's heartbeat.
func (r *Repository) Heartbeat(ctx context.Context, db DB) error {
	n, err := affected(db.ExecContext(ctx, r.expand(r.q.heartbeat), r.owner))
	if err == nil && n == 0 {
		// MySQL counts the rows changed, not the rows found: a heartbeat
		// within the same microsecond changes nothing.
		err = r.mustExist(ctx, db)
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
	names, err := queryStrings(ctx, db, r.expand(r.q.owners), r.owner, within.Microseconds())
	if err != nil {
		return nil, wrapf(err, "list owners")
	}
	slices.Sort(names)
	return names, nil
}

// Expire marks the Active tasks of other owners silent for longer than after
// Expired and returns how many, skipping rows that others locked.
func (r *Repository) Expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	var n int64
	err := r.atomic(ctx, db, func(tx DB) error {
		rows, err := tx.QueryContext(ctx, r.expand(r.q.expireLock), r.owner, after.Microseconds())
		if err != nil {
			return err
		}
		byTopic, err := scanTopicSequences(rows)
		if err != nil {
			return err
		}
		for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
			if err := r.execSequences(ctx, tx, r.q.expireSet, topic, byTopic[topic]); err != nil {
				return err
			}
			n += int64(len(byTopic[topic]))
		}
		return nil
	})
	if err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	return n, nil
}

// scanTopicSequences reads rows of topic and sequence, grouped by topic.
func scanTopicSequences(rows *sql.Rows) (map[string][]int64, error) {
	defer rows.Close()
	byTopic := map[string][]int64{}
	for rows.Next() {
		var (
			topic    string
			sequence int64
		)
		if err := rows.Scan(&topic, &sequence); err != nil {
			return nil, err
		}
		byTopic[topic] = append(byTopic[topic], sequence)
	}
	return byTopic, rows.Err()
}

// PurgeOwners deletes the other owners silent for longer than after that hold
// no Active task, and returns how many.
func (r *Repository) PurgeOwners(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "purge owners")
	}
	n, err := affected(db.ExecContext(ctx, r.expand(r.q.purgeOwners), r.owner, after.Microseconds()))
	if err != nil {
		return 0, wrapf(err, "purge owners")
	}
	return n, nil
}

// affected returns the number of rows that a statement run by ExecContext
// changed, or its error.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryStrings runs a query that returns one string per row.
func queryStrings(ctx context.Context, db DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var values []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		values = append(values, s)
	}
	return values, rows.Err()
}
