package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
)

// Mark returns the mark of the schedule name of topic, in UTC, or the zero
// time when the schedule has none yet.
func (r *Repository) Mark(ctx context.Context, db DB, topic, name string) (time.Time, error) {
	if err := check.Mark(topic, name); err != nil {
		return time.Time{}, wrapf(err, "read the mark of schedule %q of %q", name, topic)
	}
	var mark time.Time
	err := db.QueryRowContext(ctx, r.expand(r.q.scheduleMark), topic, name).Scan(utcTime{&mark})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, wrapf(err, "read the mark of schedule %q of %q", name, topic)
	}
	return mark, nil
}

// Advance sets the mark of the schedule name of topic to to if it is from
// (a zero from: if the schedule has no mark yet), and reports whether it
// did, in one statement: of several concurrent advances from one mark, one
// does and the others report false. Marks are kept and compared in UTC to
// the microsecond, so a from read by Mark matches whatever its location.
// to must be later than from, and both within the years taskapi.MinYear to
// taskapi.MaxYear; else the error wraps taskapi.ErrInvalidArgument and
// nothing changes (MySQL's INSERT IGNORE would store a bad value with a
// warning rather than fail).
func (r *Repository) Advance(ctx context.Context, db DB, topic, name string, from, to time.Time) (bool, error) {
	if err := check.Advance(topic, name, from, to); err != nil {
		return false, wrapf(err, "advance schedule %q of %q", name, topic)
	}
	query, args := r.q.scheduleStart, []any{topic, name, timeParameter(to)}
	if !from.IsZero() {
		query, args = r.q.scheduleMove, []any{timeParameter(to), topic, name, timeParameter(from)}
	}
	n, err := r.written(ctx, db, r.expand(query), args...)
	if err != nil {
		return false, wrapf(err, "advance schedule %q of %q from %v to %v", name, topic, from.UTC(), to.UTC())
	}
	return n == 1, nil
}
