package taskansi

import (
	"context"
	"slices"

	"github.com/taskrepo/taskrepo/internal/batch"
)

// readChunks calls read for topics a few dozen at a time (see
// batch.ReadTopics), letting go of the locks on their partitions chunk by
// chunk: each chunk is read in a transaction of its own, or in a savepoint
// inside a caller's transaction, rolled back once read is done (read must
// only read).
func (r *Repository) readChunks(ctx context.Context, db DB, topics []string, read func(db DB, chunk []string) error) error {
	db, err := r.handle(ctx, db)
	if err != nil {
		return err
	}
	letGo := func(read func(db DB) error) error { return r.unit(ctx, db, read, true) }
	return batch.ReadTopics(db, topics, letGo, read)
}

// writeChunks calls write for topics a few dozen at a time and returns the
// sum of what it returns (see batch.WriteTopics): on a handle of the call's
// own each chunk is a transaction of its own, run again on a conflict;
// inside a caller's transaction all the chunks are one savepoint.
func (r *Repository) writeChunks(ctx context.Context, db DB, topics []string, write func(db DB, chunk []string) (int64, error)) (int64, error) {
	db, err := r.handle(ctx, db) // once: inside tells how the chunks go
	if err != nil {
		return 0, err
	}
	unit := func(step func(db DB) error) error {
		return r.retrying(ctx, db, func(db DB) error { return r.atomic(ctx, db, step) })
	}
	return batch.WriteTopics(inside(db), topics, unit, write)
}

// topicFilter returns the {topicFilter} condition and arguments for a
// chunk of topics, nothing for no chunk (every topic).
func topicFilter(chunk []string) (string, []any) {
	if chunk == nil {
		return "", nil
	}
	return " AND topic IN (" + marks(len(chunk)) + ")", appendArgs(nil, chunk...)
}

// allTopics lists the registered topics, sorted.
func (r *Repository) allTopics(ctx context.Context, db DB) ([]string, error) {
	names, err := queryStrings(ctx, db, r.expand(r.q.topics))
	slices.Sort(names)
	return names, err
}
