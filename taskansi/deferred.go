package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Defer sets the not-before time of the given tasks of topic, named by
// sequence (a task named twice is deferred once), to until, kept to the
// microsecond in UTC: Poll takes them no earlier than until on the
// database's clock. A zero until clears the time, so that they are due at
// once. Defer locks the named tasks in a transaction of its own, waiting for
// rows that others locked, and writes only when every one is Ready in
// topic; otherwise the error, a *taskapi.StateError of
// taskapi.ErrStateMismatch, names those that are not, and nothing changes.
// No tasks is a no-op, whatever the topic.
func (r *Repository) Defer(ctx context.Context, db DB, topic string, until time.Time, tasks ...taskapi.Task) error {
	if run, err := check.Defer(topic, until, tasks); !run {
		return wrapf(err, "defer tasks of %q", topic)
	}
	err := r.setNamed(ctx, db, topic, tasks, r.q.deferLock, []any{topic}, taskapi.ErrStateMismatch, r.q.deferSet, []any{nullableTime(until), topic})
	if err != nil {
		return wrapf(err, "defer tasks of %q", topic)
	}
	return nil
}

// NextDue returns the earliest NotBefore later than the database's now
// (on SQLite the process's, see clock.go) among the Ready tasks of topic,
// in UTC, or the zero time when none waits (also for a topic that is not
// registered): when a poll of topic will next find a deferred task due.
// Tasks already due do not count. It reads the first entry after now of the
// index of deferred tasks (on MySQL task_due), whatever their number.
func (r *Repository) NextDue(ctx context.Context, db DB, topic string) (time.Time, error) {
	if err := check.Topic(topic); err != nil {
		return time.Time{}, wrapf(err, "read when a task of %q is next due", topic)
	}
	var next time.Time
	err := db.QueryRowContext(ctx, r.expand(r.q.nextDue), r.args(topic, now{})...).Scan(utcTime{&next})
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, wrapf(err, "read when a task of %q is next due", topic)
	}
	return next, nil
}
