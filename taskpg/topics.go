package taskpg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Initialize registers topic and reports whether it was newly registered. The
// schema's trigger creates the topic's partition apart and attaches it, which
// locks no other topic's tasks.
func (r *Repository) Initialize(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.initialize, "initialize topic %q", topic)
}

// Destroy drops topic with all its tasks and the marks of its schedules,
// and reports whether the topic existed. The schema's trigger empties the
// topic's partition and closes it to new tasks; it stays attached, empty,
// until the topic is initialized again. The marks go first, in the same
// round trip and transaction (see destroyMarks), and before them the
// topic's term lock, exclusively: destroying the topic ends its term, so
// it waits for the transactions that hold the term (see Hold), as a Lead
// that takes a term over does.
func (r *Repository) Destroy(ctx context.Context, db DB, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, "destroy topic %q", topic)
	}
	var tag pgconn.CommandTag
	_, err := retrying(ctx, db, func() (struct{}, error) {
		return struct{}{}, pipeline(ctx, db,
			step{sql: lockExclusive, args: []any{lockkey.TermSpace, r.termKey(topic)}},
			step{sql: r.q.destroyMarks, args: []any{topic}},
			step{sql: r.q.destroy, args: []any{topic}, tag: &tag})
	})
	if err != nil {
		return false, wrapf(err, "destroy topic %q", topic)
	}
	return tag.RowsAffected() > 0, nil
}

func (r *Repository) execTopic(ctx context.Context, db DB, query, format, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, format, topic)
	}
	tag, err := retrying(ctx, db, func() (pgconn.CommandTag, error) { return exec(ctx, db, query, topic) })
	if err != nil {
		return false, wrapf(err, format, topic)
	}
	return tag.RowsAffected() > 0, nil
}

// Topics lists the registered topics, sorted.
func (r *Repository) Topics(ctx context.Context, db DB) ([]string, error) {
	names, err := r.allTopics(ctx, db)
	if err != nil {
		return nil, wrapf(err, "list topics")
	}
	return names, nil
}

// PurgeAll truncates the partition of topic, if the topic exists, through a
// function of the schema that has the right to. It works in a savepoint
// inside a caller's transaction: TRUNCATE may fail on a lock.
func (r *Repository) PurgeAll(ctx context.Context, db DB, topic string) error {
	if err := check.Topic(topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		return struct{}{}, atomic(ctx, db, func(tx DB) error {
			_, err := tx.Exec(ctx, r.q.truncate, topic)
			return err
		})
	})
	if err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	return nil
}

// Purge deletes the tasks of topic within span in the given states (Failed to
// Cancelled when none are given) and returns how many.
func (r *Repository) Purge(ctx context.Context, db DB, topic string, span taskapi.Range, states ...taskapi.State) (int64, error) {
	return r.PurgeCompletedBy(ctx, db, topic, span, time.Time{}, states...)
}

// PurgeCompletedBy is Purge of the tasks completed at or before completedBy (a
// zero completedBy: all), for taskapi.CompletionBounded.
func (r *Repository) PurgeCompletedBy(ctx context.Context, db DB, topic string, span taskapi.Range, completedBy time.Time, states ...taskapi.State) (int64, error) {
	states, run, err := check.Purge(topic, span, states)
	if !run {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	tag, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		return exec(ctx, db, r.q.purge, topic, span.From, span.To, ordinals(states), timeParameter(completedBy))
	})
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	return tag.RowsAffected(), nil
}

// ordinals returns the stored ordinals of states.
func ordinals(states []taskapi.State) []int16 {
	ords := make([]int16, len(states))
	for i, s := range states {
		ords[i] = int16(s)
	}
	return ords
}

// Refresh gathers the planner statistics of the partitions of every topic, a
// few dozen at a time (on a pool each step is a transaction of its own;
// inside a caller's transaction all of them are one savepoint), through a
// function of the schema that has the right to.
func (r *Repository) Refresh(ctx context.Context, db DB) error {
	topics, err := r.allTopics(ctx, db)
	if err == nil {
		_, err = writeChunks(ctx, db, topics, func(db DB, chunk []string) (int64, error) {
			_, err := db.Exec(ctx, r.q.analyze, chunk)
			return 0, err
		})
	}
	if err != nil {
		return wrapf(err, "refresh statistics")
	}
	return nil
}
