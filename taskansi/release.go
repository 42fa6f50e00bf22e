package taskansi

import (
	"context"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Release makes Active tasks of this owner Ready again, as if they had not
// been polled, in a transaction of its own: all of them or none.
func (r *Repository) Release(ctx context.Context, db DB, topic string, tasks ...taskapi.Task) error {
	if err := check.Topic(topic); err != nil {
		return wrapf(err, "release tasks of %q", topic)
	}
	if len(tasks) == 0 {
		return nil
	}
	_, sequences := batch.Positions(tasks)
	ranges := seqrange.Ranges(sequences)
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			if err := r.lockNamed(ctx, tx, r.q.completeLock, topic, []any{topic, r.owner}, ranges, taskapi.ErrNotActive); err != nil {
				return err
			}
			return r.execRanges(ctx, tx, r.q.releaseSet, []any{topic}, ranges)
		})
	})
	if err != nil {
		return wrapf(err, "release tasks of %q", topic)
	}
	return nil
}
