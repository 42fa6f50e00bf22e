package taskpg

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// mapError maps the errors of PostgreSQL that have a meaning in taskapi to
// its sentinels, keeping the driver's error in the chain.
func mapError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "40001", // serialization_failure
		"40P01": // deadlock_detected
		return fmt.Errorf("%w: %w", taskapi.ErrConflict, err)
	case "23514": // check_violation
		switch pgErr.ConstraintName {
		case "", // no partition of task for the row's topic
			"task_destroyed": // the partition of a destroyed topic
			return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
		}
		return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
	case "22021", // character_not_in_repertoire: invalid UTF-8 or NUL
		"22P05", // untranslatable_character
		"22001": // string_data_right_truncation: over a column's length
		return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
	case "53200": // out_of_memory, from the lock table
		return fmt.Errorf("%w (%s)", err, check.LockTableFull)
	}
	return err
}

// wrapf wraps err, mapped by mapError, with the package name and a
// description of the call. Text arguments are shortened (check.Short), so
// that a message never repeats a huge argument in full.
func wrapf(err error, format string, args ...any) error {
	for i, arg := range args {
		if s, ok := arg.(string); ok {
			args[i] = check.Short(s)
		}
	}
	return fmt.Errorf("taskpg: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}
