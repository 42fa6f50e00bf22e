package taskpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	case "23514": // check_violation
		if pgErr.ConstraintName == "" { // no partition of task for the row's topic
			return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
		}
		return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
	case "22021", // character_not_in_repertoire: invalid UTF-8 or NUL
		"22P05", // untranslatable_character
		"22001": // string_data_right_truncation: over a column's length
		return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
	}
	return err
}

// wrapf wraps err, mapped by mapError, with the package name and a description
// of the call.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("taskpg: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}

// inTx runs fn inside a transaction of its own: a real one on a pool or a
// connection, a savepoint inside a caller's transaction. When fn fails, it
// rolls back, even once ctx is done, so that a caller's transaction stays
// usable.
func inTx(ctx context.Context, db DB, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err = fn(tx); err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx)) // the error of fn or Commit is the one to report
	}
	return err
}
