package taskpg

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Clock[DB] = (*Repository)(nil)

// clockNow reads the moment of the statement, in UTC: the clock that
// created, completed, NotBefore, heartbeats and terms are on.
const clockNow = `SELECT ` + now

// Now returns the database's time at the statement, in UTC, to the
// microsecond (PostgreSQL keeps no finer time).
func (r *Repository) Now(ctx context.Context, db DB) (time.Time, error) {
	var at time.Time
	if err := db.QueryRow(ctx, clockNow).Scan(&at); err != nil {
		return time.Time{}, wrapf(err, "read the database clock")
	}
	return utc(at), nil
}
