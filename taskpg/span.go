package taskpg

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/batch"
)

// chunks splits topics into slices that one statement may name (see
// batch.TopicsPerStatement).
func chunks(topics []string) [][]string {
	return slices.Collect(slices.Chunk(topics, batch.TopicsPerStatement))
}

// readChunks calls read for topics a few dozen at a time (see
// batch.ReadTopics), letting go of the locks on their partitions chunk by
// chunk: each chunk is a transaction of its own where db is a pool or a
// connection outside a transaction (read must then send one statement), and
// a savepoint that is rolled back once read is done inside a caller's
// transaction (read must only read).
func readChunks(ctx context.Context, db DB, topics []string, read func(db DB, chunk []string) error) error {
	letGo := func(read func(db DB) error) error {
		if scopeOf(db) == own {
			return read(db)
		}
		return unit(ctx, db, read, true)
	}
	return batch.ReadTopics(db, topics, letGo, read)
}

// writeChunks calls write for topics a few dozen at a time and returns the
// sum of what it returns (see batch.WriteTopics): on a pool or a connection
// outside a transaction each chunk's statements commit by themselves, and
// a conflict runs the chunk again; inside a caller's transaction all the
// chunks are one savepoint.
func writeChunks(ctx context.Context, db DB, topics []string, write func(db DB, chunk []string) (int64, error)) (int64, error) {
	unit := func(step func(db DB) error) error {
		_, err := retrying(ctx, db, func() (struct{}, error) { return struct{}{}, spanning(ctx, db, step) })
		return err
	}
	return batch.WriteTopics(scopeOf(db) != own, topics, unit, write)
}

// spanning runs fn, whose statements span topics, as one unit (a savepoint)
// inside a caller's transaction, so that a failure changes nothing; on a
// handle of the call's own each of its statements commits by itself, so
// that the locks of one chunk of topics are let go before the next.
func spanning(ctx context.Context, db DB, fn func(db DB) error) error {
	if scopeOf(db) == own {
		return fn(db)
	}
	return atomic(ctx, db, fn)
}

// allTopics lists the registered topics, sorted.
func (r *Repository) allTopics(ctx context.Context, db DB) ([]string, error) {
	rows, _ := db.Query(ctx, r.q.topics)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}
