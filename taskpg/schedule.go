package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/taskrepo/taskrepo/internal/check"
)

// Mark returns the mark of the schedule name of topic, in UTC, or the zero
// time when the schedule has none yet.
func (r *Repository) Mark(ctx context.Context, db DB, topic, name string) (time.Time, error) {
	if err := check.Mark(topic, name); err != nil {
		return time.Time{}, wrapf(err, "read the mark of schedule %q of %q", name, topic)
	}
	var mark time.Time
	err := db.QueryRow(ctx, r.q.scheduleMark, topic, name).Scan(&mark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, wrapf(err, "read the mark of schedule %q of %q", name, topic)
	}
	return utc(mark), nil
}

// Advance sets the mark of the schedule name of topic to to if it is from
// (a zero from: if the schedule has no mark yet), and reports whether it
// did, in one statement: of several concurrent advances from one mark, one
// does and the others report false. Marks are kept and compared in UTC to
// the microsecond, so a from read by Mark matches whatever its location.
// to must be later than from, and both within the years taskapi.MinYear to
// taskapi.MaxYear; else the error wraps taskapi.ErrInvalidArgument and
// nothing changes.
func (r *Repository) Advance(ctx context.Context, db DB, topic, name string, from, to time.Time) (bool, error) {
	if err := check.Advance(topic, name, from, to); err != nil {
		return false, wrapf(err, "advance schedule %q of %q", name, topic)
	}
	tag, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		if from.IsZero() {
			return exec(ctx, db, r.q.scheduleStart, topic, name, markTime(to))
		}
		return exec(ctx, db, r.q.scheduleMove, topic, name, markTime(from), markTime(to))
	})
	if err != nil {
		return false, wrapf(err, "advance schedule %q of %q from %v to %v", name, topic, from.UTC(), to.UTC())
	}
	return tag.RowsAffected() == 1, nil
}

// markTime returns a mark as it is stored: in UTC, to the microsecond.
func markTime(t time.Time) pgtype.Timestamp {
	return timestamp(t.Truncate(time.Microsecond))
}
