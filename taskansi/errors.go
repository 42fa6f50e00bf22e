package taskansi

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Codes of the drivers' errors that have a meaning in taskapi.
const (
	sqliteBusy              = 5    // SQLITE_BUSY: another connection holds the lock
	sqliteTooBig            = 18   // SQLITE_TOOBIG: over a length limit
	sqliteConstraintTrigger = 1811 // SQLITE_CONSTRAINT_TRIGGER: the unknown-topic trigger
	mysqlLockWaitTimeout    = 1205 // ER_LOCK_WAIT_TIMEOUT
	mysqlDeadlock           = 1213 // ER_LOCK_DEADLOCK
	mysqlNoSavepoint        = 1305 // ER_SP_DOES_NOT_EXIST: also a savepoint that does not exist
)

// mapError maps the errors of the databases that have a meaning in taskapi to
// its sentinels, keeping the driver's error in the chain. It knows the
// drivers by the shape of their errors, so that the package imports none: a
// SQLState method (pgx), a Code method (modernc.org/sqlite), a MySQLError
// with a Number (go-sql-driver/mysql). It reads codes, never message text.
// Arguments are validated before any SQL, so the data errors are the last
// line: only the codes of text the caller sent (bad encoding, over-long)
// blame the caller.
func mapError(err error) error {
	if sentinel := classify(err); sentinel != nil {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "53200" { // out_of_memory, from the lock table
		return fmt.Errorf("%w (%s)", err, check.LockTableFull)
	}
	return err
}

// classify returns the sentinel that err means, or nil.
func classify(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		switch pgErr.SQLState() {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return taskapi.ErrConflict
		case "22021", "22P05", "22001": // bad encoding, untranslatable, too long
			return taskapi.ErrInvalidArgument
		}
		return nil
	}
	var sqliteErr interface{ Code() int }
	if errors.As(err, &sqliteErr) {
		switch code := sqliteErr.Code(); {
		case code == sqliteConstraintTrigger:
			return taskapi.ErrUnknownTopic
		case code&0xff == sqliteBusy:
			return taskapi.ErrConflict
		case code&0xff == sqliteTooBig:
			return taskapi.ErrInvalidArgument
		}
		return nil
	}
	switch mysqlNumber(err) {
	case mysqlDeadlock, mysqlLockWaitTimeout:
		return taskapi.ErrConflict
	}
	return nil
}

// mysqlNumber returns the error number of a go-sql-driver MySQLError in
// err's chain (its Number field: the type has no method that tells it), or 0.
func mysqlNumber(err error) uint16 {
	if err == nil {
		return 0
	}
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct && v.Elem().Type().Name() == "MySQLError" {
		if n := v.Elem().FieldByName("Number"); n.IsValid() && n.Kind() == reflect.Uint16 {
			return uint16(n.Uint())
		}
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return mysqlNumber(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if n := mysqlNumber(inner); n != 0 {
				return n
			}
		}
	}
	return 0
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
	return fmt.Errorf("taskansi: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}
