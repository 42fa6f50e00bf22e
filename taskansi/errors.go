package taskansi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Codes of the drivers' errors that have a meaning in taskapi.
const (
	sqliteTooBig            = 18   // SQLITE_TOOBIG: over a length limit
	sqliteConstraintTrigger = 1811 // SQLITE_CONSTRAINT_TRIGGER: the unknown-topic trigger
)

// mapError maps the errors of the databases that have a meaning in taskapi to
// its sentinels, keeping the driver's error in the chain. It knows the
// drivers by the methods of their errors, so that the package imports none:
// SQLState (pgx: class 22 is bad data, a check violation without a
// constraint is a missing partition) and Code (modernc.org/sqlite).
// Arguments are validated before any SQL, so these are the last line.
func mapError(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		switch state := pgErr.SQLState(); {
		case strings.HasPrefix(state, "22"):
			return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
		case state == "23514" && strings.Contains(err.Error(), "no partition"):
			return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
		}
	}
	var sqliteErr interface{ Code() int }
	if errors.As(err, &sqliteErr) {
		switch code := sqliteErr.Code(); {
		case code == sqliteConstraintTrigger:
			return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
		case code&0xff == sqliteTooBig:
			return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
		}
	}
	return err
}

// wrapf wraps err, mapped by mapError, with the package name and a
// description of the call.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("taskansi: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}
