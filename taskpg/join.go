package taskpg

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Join releases the Suspended tasks of every group whose identifiers all have
// a matching task. The groups are processed in order, one statement each, so
// that a group sees what the groups before it released; the statements go in
// one round trip, which outside a transaction runs in an implicit one.
func (r *Repository) Join(ctx context.Context, db DB, topic string, junction taskapi.Junction, groups ...[]string) ([]string, error) {
	if err := check.Join(topic, junction, groups); err != nil {
		return nil, wrapf(err, "join tasks of %q", topic)
	}
	present := ordinals([]taskapi.State{taskapi.Suspended})
	if junction == taskapi.Eternal {
		present = ordinals(allStates[:taskapi.Redundant]) // every state but Redundant
	}
	tags := make([]pgconn.CommandTag, len(groups))
	var steps []step
	for i, group := range groups {
		if len(group) > 0 {
			steps = append(steps, step{sql: r.q.join, args: []any{topic, batch.Group(group), present}, tag: &tags[i]})
		}
	}
	if len(steps) == 0 {
		return nil, nil
	}
	_, err := retrying(ctx, db, func() (struct{}, error) { return struct{}{}, pipeline(ctx, db, steps...) })
	if err != nil {
		return nil, wrapf(err, "join tasks of %q", topic)
	}
	r.rewound(topic)
	released := make([]bool, len(groups))
	for i, tag := range tags {
		released[i] = tag.RowsAffected() > 0
	}
	return batch.Released(groups, released), nil
}
