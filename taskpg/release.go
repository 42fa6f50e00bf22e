package taskpg

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Release makes Active tasks of this owner Ready again, as if they had not
// been polled, in one statement that changes them all or none.
func (r *Repository) Release(ctx context.Context, db DB, topic string, tasks ...taskapi.Task) error {
	if run, err := check.Release(topic, tasks); !run {
		return wrapf(err, "release tasks of %q", topic)
	}
	_, sequences := batch.Positions(tasks)
	los, his := bounds(sequences)
	_, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		tag, err := exec(ctx, db, r.q.release, topic, los, his, r.owner, len(sequences))
		if err == nil && tag.RowsAffected() == 0 {
			err = r.faults(ctx, db, r.q.completeFaults, topic, sequencesOf(los, his), taskapi.ErrNotActive, r.owner)
		}
		return tag, err
	})
	if err != nil {
		return wrapf(err, "release tasks of %q", topic)
	}
	r.rewound(topic)
	return nil
}
