package taskpg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Regulator[DB] = (*Repository)(nil)

// The limits of a topic live in its row of task_topic (NULL for none);
// migration 00011 tells how polls keep them.
const (
	limitsSet  = `UPDATE {schema}.task_topic SET active_limit = NULLIF($2::bigint, 0), identifier_limit = NULLIF($3::bigint, 0) WHERE topic = $1`
	limitsRows = `
SELECT topic, coalesce(active_limit, 0), coalesce(identifier_limit, 0) FROM {schema}.task_topic
WHERE active_limit IS NOT NULL OR identifier_limit IS NOT NULL`
)

// SetLimits sets the limits of topic; zero Limits removes them. Setting the
// first limit of a topic, or removing its last, waits for the polls and
// pushes of the topic under way, and holds theirs back until the call's
// transaction ends: it changes the trigger of the topic's partition. So
// does setting or removing a limit per identifier, which builds or drops an
// index of the topic's Ready and Active tasks.
func (r *Repository) SetLimits(ctx context.Context, db DB, topic string, limits taskapi.Limits) error {
	if err := check.Limits(topic, limits); err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := exec(ctx, db, r.fleetSQL(limitsSet), topic, limits.Active, limits.PerIdentifier)
		if err == nil && tag.RowsAffected() == 0 {
			err = fmt.Errorf("topic %q is not registered: %w", check.Short(topic), taskapi.ErrUnknownTopic)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	if limits.PerIdentifier > 0 {
		r.keyed.Store(topic, struct{}{})
	} else {
		r.keyed.Delete(topic)
	}
	return nil
}

// Limits returns the limits of every registered topic that has any.
func (r *Repository) Limits(ctx context.Context, db DB) (map[string]taskapi.Limits, error) {
	rows, _ := query(ctx, db, r.fleetSQL(limitsRows))
	all := map[string]taskapi.Limits{}
	var (
		topic  string
		limits taskapi.Limits
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &limits.Active, &limits.PerIdentifier}, func() error {
		all[topic] = limits
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "read limits")
	}
	return all, nil
}
