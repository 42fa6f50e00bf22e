package taskpg

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/fault"
	"github.com/taskrepo/taskrepo/taskapi"
)

// mapError maps the errors of PostgreSQL and pgx that have a meaning in
// taskapi to its sentinels, keeping the driver's error in the chain.
func mapError(err error) error {
	err = fault.Mark(err, classify(err))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53200" { // out_of_memory, from the lock table
		return fmt.Errorf("%w (%s)", err, check.LockTableFull)
	}
	return err
}

// classify returns the sentinel that err means, or nil: by its SQLSTATE
// (see fault.State) when the server reported it, else ErrUnavailable for
// the failures of pgx's connections, which carry no code: a connection
// that could not be made (*pgconn.ConnectError, unless the server refused
// it with a code of its own), one that pgx has closed (pgconn.ErrConnClosed)
// or that broke (see fault.Lost).
func classify(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if pgErr.Code != "23514" { // check_violation
			return fault.State(pgErr.Code)
		}
		switch pgErr.ConstraintName {
		case "", // no partition of task for the row's topic
			"task_destroyed": // the partition of a destroyed topic
			return taskapi.ErrUnknownTopic
		}
		return taskapi.ErrInvalidArgument
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.Is(err, pgconn.ErrConnClosed) || fault.Lost(err) {
		return taskapi.ErrUnavailable
	}
	return nil
}

// wrapf wraps err, mapped by mapError, with the package name and a
// description of the call. Text arguments are shortened (check.Short), so
// that a message never repeats a huge argument in full. A nil err stays
// nil, so that a method returns wrapf(err, …) whatever err is.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	for i, arg := range args {
		if s, ok := arg.(string); ok {
			args[i] = check.Short(s)
		}
	}
	return fmt.Errorf("taskpg: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}

// unregistered is the error of a call on a topic that is not registered.
func unregistered(topic string) error {
	return fmt.Errorf("topic %q is not registered: %w", check.Short(topic), taskapi.ErrUnknownTopic)
}
