package taskansi

import (
	"context"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Join releases the Suspended tasks of every group whose identifiers all have
// a matching task. The groups are processed in order, in one transaction of
// its own, so that a group sees what the groups before it released.
func (r *Repository) Join(ctx context.Context, db DB, topic string, junction taskapi.Junction, groups ...[]string) ([]string, error) {
	if err := check.Join(topic, junction, groups); err != nil {
		return nil, wrapf(err, "join tasks of %q", topic)
	}
	present := []taskapi.State{taskapi.Suspended}
	if junction == taskapi.Eternal {
		present = allStates[:taskapi.Redundant] // every state but Redundant
	}
	released := make([]bool, len(groups))
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			for i, group := range groups {
				if len(group) == 0 {
					continue
				}
				var err error
				if released[i], err = r.release(ctx, tx, topic, batch.Group(group), present); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrapf(err, "join tasks of %q", topic)
	}
	return batch.Released(groups, released), nil
}

// release releases the Suspended tasks of one group of distinct identifiers
// when each has a task in a present state, and reports whether it released
// any. A group is one statement, so it is bounded by the database's
// parameter limit (32766 on SQLite).
func (r *Repository) release(ctx context.Context, tx DB, topic string, identifiers []string, present []taskapi.State) (bool, error) {
	query := r.expand(r.q.joinPresent, "{list}", marks(len(identifiers)), "{states}", marks(len(present)))
	args := appendArgs(appendArgs([]any{topic}, identifiers...), ordinals(present)...)
	var n int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&n); err != nil || n != len(identifiers) {
		return false, err
	}
	changed, err := affected(tx.ExecContext(ctx, r.expand(r.q.joinRelease, "{list}", marks(len(identifiers))),
		appendArgs([]any{topic}, identifiers...)...))
	return changed > 0, err
}
