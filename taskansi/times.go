package taskansi

import (
	"fmt"
	"time"
)

// timeLayout is how times travel as parameters, and how SQLite stores them:
// UTC with six fractional digits, so that they compare as text too.
const timeLayout = "2006-01-02 15:04:05.000000"

// The bounds of the times that every dialect stores (MySQL's DATETIME).
var (
	earliest = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// timeParameter returns t as a parameter: in UTC, within the bounds.
func timeParameter(t time.Time) string {
	t = t.UTC()
	switch {
	case t.Before(earliest):
		t = earliest
	case t.After(latest):
		t = latest
	}
	return t.Format(timeLayout)
}

// completedByParameter returns the bound of taskapi.CompletionBounded as a parameter
// (see timeParameter): the latest time for none, which every completion
// time precedes.
func completedByParameter(completedBy time.Time) string {
	if completedBy.IsZero() {
		return timeParameter(latest)
	}
	return timeParameter(completedBy)
}

// nullableTime returns t as a parameter (see timeParameter), or nil (NULL)
// for the zero time, which means none.
func nullableTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return timeParameter(t)
}

// utcTime scans a time column that holds UTC, whatever form the driver gives
// it in: a time.Time in any location (pgx, MySQL with parseTime), or text
// (SQLite, MySQL without parseTime). NULL leaves the zero time.
type utcTime struct{ t *time.Time }

// Scan implements sql.Scanner.
func (u utcTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*u.t = time.Time{}
	case time.Time:
		*u.t = time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
	case string:
		return u.parse(v)
	case []byte:
		return u.parse(string(v))
	default:
		return fmt.Errorf("cannot scan %T into a time", src)
	}
	return nil
}

func (u utcTime) parse(text string) error {
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", text, time.UTC)
	if err != nil {
		return fmt.Errorf("parse time %q: %w", text, err)
	}
	*u.t = t
	return nil
}
