package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Defer sets the NotBefore of the given tasks of topic to until, kept in UTC
// to the microsecond: Poll returns them once until has come on the
// database's clock. A zero until clears it, and the tasks are due at once.
// The tasks are named by sequence, each once however often it is given; no
// tasks is a no-op, whatever the topic. One statement writes only when every
// task is Ready in topic; otherwise nothing changes and the error, a
// *taskapi.StateError with ErrStateMismatch, names the tasks that are not.
func (r *Repository) Defer(ctx context.Context, db DB, topic string, until time.Time, tasks ...taskapi.Task) error {
	if run, err := check.Defer(topic, until, tasks); !run {
		return wrapf(err, "defer tasks of %q", topic)
	}
	_, sequences := batch.Positions(tasks)
	los, his := bounds(sequences)
	_, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		tag, err := exec(ctx, db, r.q.deferTasks, topic, los, his, notBefore(until), len(sequences))
		if err == nil && tag.RowsAffected() == 0 {
			err = r.faults(ctx, db, r.q.readyFaults, topic, sequencesOf(los, his), taskapi.ErrStateMismatch)
		}
		return tag, err
	})
	if err != nil {
		return wrapf(err, "defer tasks of %q until %v", topic, until.UTC())
	}
	if until.IsZero() {
		r.rewound(topic) // back in the index of Ready tasks, with their sequences
	}
	return nil
}

// NextDue returns the earliest NotBefore later than the database's now
// among the Ready tasks of topic, in UTC, or the zero time when none waits
// (also for a topic that is not registered): when a poll of topic will next
// find a deferred task due. Tasks already due do not count. It reads the
// first entry after now of the index of deferred tasks, whatever their
// number.
func (r *Repository) NextDue(ctx context.Context, db DB, topic string) (time.Time, error) {
	if err := check.Topic(topic); err != nil {
		return time.Time{}, wrapf(err, "read when a task of %q is next due", topic)
	}
	rows, _ := query(ctx, db, r.q.nextDue, topic)
	next, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[time.Time])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, wrapf(err, "read when a task of %q is next due", topic)
	}
	return utc(next), nil
}
