package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
)

// Register registers this owner with a fresh heartbeat and reports whether it
// was newly registered. When another repository registered the owner's name
// last (the same process started again, say), the Active tasks held under the
// name are made Expired first, so that they can be revived at once.
func (r *Repository) Register(ctx context.Context, db DB) (bool, error) {
	var inserted bool
	err := r.retrying(ctx, db, func(db DB) (err error) {
		if r.dialect.partitioned && !inside(db) { // each chunk of topics in a transaction of its own
			inserted, err = r.register(ctx, db)
			return err
		}
		return r.atomic(ctx, db, func(tx DB) (err error) {
			inserted, err = r.register(ctx, tx)
			return err
		})
	})
	if err != nil {
		return false, wrapf(err, "register owner %q", r.owner)
	}
	return inserted, nil
}

func (r *Repository) register(ctx context.Context, tx DB) (bool, error) {
	var prior string
	err := tx.QueryRowContext(ctx, r.expand(r.q.priorIncarnation), r.owner).Scan(&prior)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		n, err := r.sealedExec(ctx, tx, r.expand(r.q.register), r.args(r.owner, now{}, r.incarnation)...)
		if err != nil || n > 0 {
			return n > 0, err
		}
		// Another registered the name meanwhile: take it over below.
	case err != nil:
		return false, err
	case prior != r.incarnation:
		if err := r.expireEarlierLife(ctx, tx); err != nil {
			return false, err
		}
	}
	_, err = r.sealedExec(ctx, tx, r.expand(r.q.reregister), r.args(now{}, r.incarnation, r.owner)...)
	return false, err
}

// expireEarlierLife makes the Active tasks held under this owner's name
// Expired, waiting for rows that the earlier life's transactions still hold
// (they end with their connections). On PostgreSQL it visits the topics
// where the name holds tasks, a few dozen at a time: each chunk in a
// transaction of its own where db is a handle of the call's own.
func (r *Repository) expireEarlierLife(ctx context.Context, db DB) error {
	if !r.dialect.partitioned { // one statement over the whole table
		_, err := r.expireLocked(ctx, db, r.q.expireOwnLock, nil, r.owner)
		return err
	}
	held, err := r.holders(ctx, db, r.q.ownHolds, r.owner)
	if err != nil {
		return err
	}
	unit := func(step func(db DB) error) error {
		if inside(db) {
			return step(db)
		}
		return r.atomic(ctx, db, step)
	}
	_, err = batch.WriteTopics(inside(db), slices.Sorted(maps.Keys(held)), unit, func(db DB, chunk []string) (int64, error) {
		return r.expireLocked(ctx, db, r.q.expireOwnLock, chunk, r.owner)
	})
	return err
}

// expireLocked runs query, which locks Active tasks (topic and sequence) of
// the topics of chunk ({topicFilter}; all for no chunk) and takes args, and
// makes them Expired.
func (r *Repository) expireLocked(ctx context.Context, tx DB, query string, chunk []string, args ...any) (int64, error) {
	filter, topics := topicFilter(chunk)
	rows, err := tx.QueryContext(ctx, r.expand(query, "{topicFilter}", filter), r.args(append(args, topics...)...)...)
	if err != nil {
		return 0, err
	}
	byTopic, err := scanTopicSequences(rows)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		if err := r.execSequences(ctx, tx, r.q.expireSet, topic, byTopic[topic]); err != nil {
			return n, err
		}
		n += int64(len(byTopic[topic]))
	}
	return n, nil
}

// Heartbeat refreshes this owner's heartbeat.
func (r *Repository) Heartbeat(ctx context.Context, db DB) error {
	err := r.retrying(ctx, db, func(db DB) error {
		return r.sealed(ctx, db, func(db DB) error {
			n, err := affected(db.ExecContext(ctx, r.expand(r.q.heartbeat), r.args(now{}, r.owner)...))
			if err == nil && n == 0 {
				// MySQL counts the rows changed, not the rows found: a
				// heartbeat within the same microsecond changes nothing.
				err = r.mustExist(ctx, db)
			}
			return err
		})
	})
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
	names, err := queryStrings(ctx, db, r.expand(r.q.owners), r.args(r.owner, ago(within))...)
	if err != nil {
		return nil, wrapf(err, "list owners")
	}
	slices.Sort(names)
	return names, nil
}

// Expire marks the Active tasks of other owners silent for longer than after
// Expired and returns how many, skipping rows that others locked. On
// PostgreSQL it visits only the topics in which silent owners hold tasks, a
// few dozen at a time: with a pool each such step is a transaction of its
// own.
func (r *Repository) Expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	n, err := r.expire(ctx, db, after)
	if err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	return n, nil
}

func (r *Repository) expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	write := func(db DB, chunk []string) (int64, error) {
		return r.expireLocked(ctx, db, r.q.expireLock, chunk, r.owner, ago(after))
	}
	if !r.dialect.partitioned { // one statement over the whole table
		var n int64
		err := r.retrying(ctx, db, func(db DB) error {
			return r.atomic(ctx, db, func(tx DB) (err error) {
				n, err = write(tx, nil)
				return err
			})
		})
		return n, err
	}
	held, err := r.holders(ctx, db, r.q.silentHolds, r.args(r.owner, ago(after))...)
	if err != nil {
		return 0, err
	}
	return r.writeChunks(ctx, db, slices.Sorted(maps.Keys(held)), write)
}

// holders runs query, which lists pairs of owner and topic, and returns the
// owners by topic.
func (r *Repository) holders(ctx context.Context, db DB, query string, args ...any) (map[string][]string, error) {
	rows, err := db.QueryContext(ctx, r.expand(query), args...)
	if err != nil {
		return nil, err
	}
	byTopic := map[string][]string{}
	err = forEachRow(rows, func(scan func(...any) error) error {
		var owner, topic string
		err := scan(&owner, &topic)
		byTopic[topic] = append(byTopic[topic], owner)
		return err
	})
	return byTopic, err
}

// scanTopicSequences reads rows of topic and sequence, grouped by topic.
func scanTopicSequences(rows *sql.Rows) (map[string][]int64, error) {
	byTopic := map[string][]int64{}
	err := forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic    string
			sequence int64
		)
		err := scan(&topic, &sequence)
		byTopic[topic] = append(byTopic[topic], sequence)
		return err
	})
	return byTopic, err
}

// PurgeOwners deletes the other owners silent for longer than after that hold
// no Active task, and returns how many. On PostgreSQL it looks for Active
// tasks in the topics where the silent owners hold tasks only.
func (r *Repository) PurgeOwners(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "purge owners")
	}
	var n int64
	err := r.retrying(ctx, db, func(db DB) (err error) {
		if r.dialect.partitioned {
			n, err = r.purgeHolders(ctx, db, after)
		} else {
			n, err = r.sealedExec(ctx, db, r.expand(r.q.purgeOwners), r.args(r.owner, ago(after))...)
		}
		return err
	})
	if err != nil {
		return 0, wrapf(err, "purge owners")
	}
	return n, nil
}

// purgeHolders purges owners on PostgreSQL: it finds the silent owners and
// the topics they hold, reads those topics a few dozen at a time for Active
// tasks, and deletes the owners that hold none, with their holds.
func (r *Repository) purgeHolders(ctx context.Context, db DB, after time.Duration) (int64, error) {
	rows, err := db.QueryContext(ctx, r.expand(r.q.silentOwners), r.args(r.owner, ago(after))...)
	if err != nil {
		return 0, err
	}
	free := map[string]bool{}
	held := map[string][]string{} // silent owners by topic
	err = forEachRow(rows, func(scan func(...any) error) error {
		var (
			owner string
			topic sql.NullString
		)
		err := scan(&owner, &topic)
		free[owner] = true
		if topic.Valid {
			held[topic.String] = append(held[topic.String], owner)
		}
		return err
	})
	if err != nil || len(free) == 0 {
		return 0, err
	}
	err = r.readChunks(ctx, db, slices.Sorted(maps.Keys(held)), func(db DB, chunk []string) error {
		var candidates []string
		for _, topic := range chunk {
			candidates = append(candidates, held[topic]...)
		}
		query := r.expand(r.q.activeOwners, "{list}", marks(len(chunk)), "{owners}", marks(len(candidates)))
		active, err := queryStrings(ctx, db, query, appendArgs(appendArgs(nil, chunk...), candidates...)...)
		for _, owner := range active {
			delete(free, owner)
		}
		return err
	})
	if err != nil || len(free) == 0 {
		return 0, err
	}
	gone := slices.Sorted(maps.Keys(free))
	var n int64
	err = r.atomic(ctx, db, func(tx DB) error {
		return batch.Split(gone, chunk, func(piece []string) error {
			deleted, err := affected(tx.ExecContext(ctx, r.expand(r.q.dropOwners, "{list}", marks(len(piece))),
				r.args(append(appendArgs(nil, piece...), r.owner, ago(after))...)...))
			n += deleted
			if err == nil {
				_, err = tx.ExecContext(ctx, r.expand(r.q.dropHolds, "{list}", marks(len(piece))), appendArgs(nil, piece...)...)
			}
			return err
		})
	})
	return n, err
}

// affected returns the number of rows that a statement run by ExecContext
// changed, or its error.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// forEachRow calls each for every row of rows, with the row's Scan.
func forEachRow(rows *sql.Rows, each func(scan func(...any) error) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryStrings runs a query that returns one string per row.
func queryStrings(ctx context.Context, db DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var values []string
	err = forEachRow(rows, func(scan func(...any) error) error {
		var s string
		err := scan(&s)
		values = append(values, s)
		return err
	})
	return values, err
}
