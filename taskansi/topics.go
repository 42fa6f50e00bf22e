package taskansi

import (
	"context"
	"slices"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Initialize registers topic and reports whether it was newly registered. On
// PostgreSQL the schema's trigger creates the topic's partition.
func (r *Repository) Initialize(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.initialize, "initialize topic %q", topic)
}

// Destroy drops topic and all its tasks, and reports whether it existed.
func (r *Repository) Destroy(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.destroy, "destroy topic %q", topic)
}

func (r *Repository) execTopic(ctx context.Context, db DB, query, format, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, format, topic)
	}
	n, err := affected(db.ExecContext(ctx, r.expand(query), topic))
	if err != nil {
		return false, wrapf(err, format, topic)
	}
	return n > 0, nil
}

// Topics lists the registered topics, sorted.
func (r *Repository) Topics(ctx context.Context, db DB) ([]string, error) {
	names, err := queryStrings(ctx, db, r.expand(r.q.topics))
	if err != nil {
		return nil, wrapf(err, "list topics")
	}
	slices.Sort(names)
	return names, nil
}

// PurgeAll deletes all tasks of topic and keeps the topic.
func (r *Repository) PurgeAll(ctx context.Context, db DB, topic string) error {
	if err := check.Topic(topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	if _, err := db.ExecContext(ctx, r.expand(r.q.purgeAll), topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	return nil
}

// defaultPurged are the states Purge deletes when given none: Failed to
// Redundant.
var defaultPurged = []taskapi.State{
	taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant,
}

// Purge deletes the tasks of topic within span in the given states (Failed to
// Redundant when none are given) and returns how many.
func (r *Repository) Purge(ctx context.Context, db DB, topic string, span taskapi.Range, states ...taskapi.State) (int64, error) {
	err := check.Topic(topic)
	if err == nil {
		err = check.States(states, nil)
	}
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	if len(states) == 0 {
		states = defaultPurged
	}
	if span.Empty() {
		return 0, nil
	}
	query := r.expand(r.q.purge, "{list}", marks(len(states)))
	n, err := affected(db.ExecContext(ctx, query, appendArgs([]any{topic, span.From, span.To}, ordinals(states)...)...))
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	return n, nil
}

// Refresh gathers the planner statistics of the tables (ANALYZE).
func (r *Repository) Refresh(ctx context.Context, db DB) error {
	rows, err := db.QueryContext(ctx, r.expand(r.q.refresh)) // MySQL reports a row per table
	if err == nil {
		err = rows.Close()
	}
	if err != nil {
		return wrapf(err, "refresh statistics")
	}
	return nil
}
