package taskansi

import (
	"context"
	"database/sql"
	"slices"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/lockkey"
)

// Rows of task_lock on MySQL: the first half serializes pushes of
// identifiers, the second half conditional polls of topics.
const (
	lockBucketCount = 4096
	pollBuckets     = lockBucketCount // offset of the buckets of polls
)

// lockIdentifiers takes, in tx, the locks by which pushes that mark or delete
// older tasks of identifiers of topic take turns, before they read the
// older tasks (see queries.go). They are held until the transaction ends.
func (r *Repository) lockIdentifiers(ctx context.Context, tx DB, topic string, identifiers []string) error {
	keys := lockkey.Identifiers(r.plain, topic, identifiers)
	switch r.dialect.locks {
	case advisoryLocks:
		topicKey := int64(lockkey.Topic(r.plain, topic))
		if len(keys) > lockkey.MaxIdentifiers {
			_, err := tx.ExecContext(ctx, r.expand(r.q.advisoryExclusive), int64(lockkey.InsertionSpace), topicKey)
			return err
		}
		if _, err := tx.ExecContext(ctx, r.expand(r.q.advisoryShared), int64(lockkey.InsertionSpace), topicKey); err != nil {
			return err
		}
		values := make([]string, len(keys))
		for i := range values {
			values[i] = "(CAST(? AS integer))"
		}
		query := r.expand(r.q.advisoryIdentifiers, "{values}", joinComma(values))
		_, err := tx.ExecContext(ctx, query, appendArgs([]any{int64(lockkey.IdentifierSpace)}, widen(keys)...)...)
		return err
	case lockRows:
		buckets := make([]int64, len(keys))
		for i, k := range keys {
			buckets[i] = int64(uint32(k) % lockBucketCount)
		}
		return r.lockBuckets(ctx, tx, buckets)
	}
	return nil
}

// lockPolls serializes the conditional polls of topic until tx ends.
func (r *Repository) lockPolls(ctx context.Context, tx DB, topic string) error {
	switch r.dialect.locks {
	case advisoryLocks:
		rows, err := tx.QueryContext(ctx, r.expand(r.q.advisoryPolls), r.schema+"."+topic) // taskpg's key
		if err != nil {
			return err
		}
		return drain(rows)
	case lockRows:
		return r.lockBuckets(ctx, tx, []int64{pollBuckets + int64(uint32(lockkey.Topic(r.plain, topic))%lockBucketCount)})
	}
	return nil
}

// lockBuckets locks rows of task_lock, in ascending order against deadlocks.
func (r *Repository) lockBuckets(ctx context.Context, tx DB, buckets []int64) error {
	slices.Sort(buckets)
	buckets = slices.Compact(buckets)
	return batch.Split(buckets, chunk, func(piece []int64) error {
		rows, err := tx.QueryContext(ctx, r.expand(r.q.lockBuckets, "{list}", marks(len(piece))), appendArgs(nil, piece...)...)
		if err != nil {
			return err
		}
		return drain(rows)
	})
}

// drain reads rows to their end and closes them: an error that the server
// sends after the first row (a lock wait that ran out, say) is seen only so.
func drain(rows *sql.Rows) error {
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// widen returns keys as the int64 that every driver takes.
func widen(keys []int32) []int64 {
	wide := make([]int64, len(keys))
	for i, k := range keys {
		wide[i] = int64(k)
	}
	return wide
}
