package taskpg

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Initialize registers topic, which creates its partition, and reports
// whether it was newly registered.
func (r *Repository) Initialize(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.initialize, "initialize topic %q", topic)
}

// Destroy drops topic with its partition and all its tasks, and reports
// whether it existed.
func (r *Repository) Destroy(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.destroy, "destroy topic %q", topic)
}

func (r *Repository) execTopic(ctx context.Context, db DB, query, format, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, format, topic)
	}
	tag, err := db.Exec(ctx, query, topic)
	if err != nil {
		return false, wrapf(err, format, topic)
	}
	return tag.RowsAffected() > 0, nil
}

// Topics lists the registered topics, sorted.
func (r *Repository) Topics(ctx context.Context, db DB) ([]string, error) {
	rows, _ := db.Query(ctx, r.q.topics)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapf(err, "list topics")
	}
	slices.Sort(names)
	return names, nil
}

// PurgeAll truncates the partition of topic, if the topic exists.
func (r *Repository) PurgeAll(ctx context.Context, db DB, topic string) error {
	if err := check.Topic(topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	truncate := "TRUNCATE " + r.schema + "." + pgx.Identifier{partition(topic)}.Sanitize()
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var exists bool
		err := tx.QueryRow(ctx, r.q.lockTopic, topic).Scan(&exists)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err == nil {
			_, err = tx.Exec(ctx, truncate)
		}
		return err
	})
	if err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	return nil
}

// partition returns the name of the partition of topic, as the schema's
// trigger names it.
func partition(topic string) string {
	sum := md5.Sum([]byte(topic))
	return "task_" + hex.EncodeToString(sum[:])
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
	tag, err := db.Exec(ctx, r.q.purge, topic, span.From, span.To, ordinals(states))
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

// Refresh refreshes the planner statistics of the task table and its
// partitions.
func (r *Repository) Refresh(ctx context.Context, db DB) error {
	if _, err := db.Exec(ctx, r.q.refresh); err != nil {
		return wrapf(err, "refresh statistics")
	}
	return nil
}
