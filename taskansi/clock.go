package taskansi

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Clock[DB] = (*Repository)(nil)

// The moment of a statement is the database's: {now} and {ago} in the SQL.
// SQLite's clock has only milliseconds, against the microseconds of the
// other databases and of the times callers pass, so on SQLite the moment
// comes from the process, which shares the database's host, taken while the
// statement's transaction holds the write lock. An argument list holds now
// where the SQL has {now} and an ago where it has {ago}; args turns them into
// what the dialect needs.

// now stands for the moment of the statement.
type now struct{}

// ago stands for the moment of the statement less a duration.
type ago time.Duration

// args returns args with now and ago replaced for the dialect: dropped or
// given as microseconds where the database reads its own clock, the
// process's time as stored text on SQLite.
func (r *Repository) args(args ...any) []any {
	out := args[:0:0]
	for _, arg := range args {
		switch a := arg.(type) {
		case now:
			if r.dialect.now == "?" {
				out = append(out, timeParameter(time.Now()))
			}
		case ago:
			if r.dialect.ago == "?" {
				out = append(out, timeParameter(time.Now().Add(-time.Duration(a))))
			} else {
				out = append(out, time.Duration(a).Microseconds())
			}
		default:
			out = append(out, arg)
		}
	}
	return out
}

// clockNow reads the moment of the statement: {now}, the dialect's clock,
// which created, completed, NotBefore, heartbeats and terms are on.
const clockNow = `SELECT {now}`

// Now returns the database's time at the statement, in UTC, to the
// microsecond; on SQLite the process's time, as every statement of the
// repository writes it there (see above).
func (r *Repository) Now(ctx context.Context, db DB) (time.Time, error) {
	var at time.Time
	query := r.expand(clockNow, "{now}", r.dialect.now)
	if err := db.QueryRowContext(ctx, query, r.args(now{})...).Scan(utcTime{&at}); err != nil {
		return time.Time{}, wrapf(err, "read the database clock")
	}
	return at, nil
}
