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
	if run, err := check.Release(topic, tasks); !run {
		return wrapf(err, "release tasks of %q", topic)
	}
	if err := r.setNamed(ctx, db, topic, tasks, r.q.completeLock, []any{topic, r.owner}, taskapi.ErrNotActive, r.q.releaseSet, []any{topic}); err != nil {
		return wrapf(err, "release tasks of %q", topic)
	}
	return nil
}

// setNamed locks the tasks named by sequence (each once) with lock and
// lockArgs, and, when every one matched, changes them with set and setArgs,
// in a transaction of its own; otherwise the error, a *taskapi.StateError of
// fault, names those that did not match, and nothing changes. Release and
// Defer are built on it.
func (r *Repository) setNamed(ctx context.Context, db DB, topic string, tasks []taskapi.Task, lock string, lockArgs []any, fault error, set string, setArgs []any) error {
	_, sequences := batch.Positions(tasks)
	ranges := seqrange.Ranges(sequences)
	return r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			if err := r.lockNamed(ctx, tx, lock, topic, lockArgs, ranges, fault); err != nil {
				return err
			}
			return r.execRanges(ctx, tx, set, setArgs, ranges)
		})
	})
}
