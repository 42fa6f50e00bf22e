package taskansi

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/fault"
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
	mariadbStatementTimeout = 1969 // ER_STATEMENT_TIMEOUT: max_statement_time
	mysqlQueryTimeout       = 3024 // ER_QUERY_TIMEOUT: max_execution_time
)

// mysqlUnavailable holds the MySQL and MariaDB error numbers that say the
// server cannot serve the call or ended it:
//   - connections refused: ER_CON_COUNT_ERROR (1040, max_connections),
//     ER_TOO_MANY_USER_CONNECTIONS (1203, max_user_connections),
//     ER_USER_LIMIT_REACHED (1226, a user's MAX_USER_CONNECTIONS or hourly
//     limits);
//   - writes refused: ER_OPTION_PREVENTS_STATEMENT (1290, as read_only
//     answers; no other option that answers it concerns taskrepo's
//     statements), ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION (1792),
//     ER_OPEN_AS_READONLY (1036, as innodb_read_only answers);
//   - sessions and statements ended: ER_SERVER_SHUTDOWN (1053),
//     ER_QUERY_INTERRUPTED (1317, KILL QUERY), ER_CONNECTION_KILLED (1927,
//     MariaDB's KILL), CR_SERVER_GONE_ERROR (2006), CR_SERVER_LOST (2013),
//     ER_CLIENT_INTERACTION_TIMEOUT (4031, MySQL's wait_timeout);
//   - statement timeouts, the class of PostgreSQL's 57014: ER_QUERY_TIMEOUT
//     (3024, MySQL's max_execution_time), ER_STATEMENT_TIMEOUT (1969,
//     MariaDB's max_statement_time).
var mysqlUnavailable = map[uint16]bool{
	1040: true, 1203: true, 1226: true,
	1290: true, 1792: true, 1036: true,
	1053: true, 1317: true, 1927: true, 2006: true, 2013: true, 4031: true,
	3024: true, 1969: true,
}

// mysqlDenied holds the MySQL and MariaDB error numbers of a privilege
// the user lacks: ER_DBACCESS_DENIED_ERROR (1044), ER_TABLEACCESS_DENIED_ERROR
// (1142), ER_COLUMNACCESS_DENIED_ERROR (1143), ER_SPECIFIC_ACCESS_DENIED_ERROR
// (1227), ER_PROCACCESS_DENIED_ERROR (1370).
var mysqlDenied = map[uint16]bool{1044: true, 1142: true, 1143: true, 1227: true, 1370: true}

// mapError maps the errors of the databases that have a meaning in taskapi to
// its sentinels, keeping the driver's error in the chain. It knows the
// drivers by the shape of their errors, so that the package imports none: a
// SQLState method (pgx), a Code method (modernc.org/sqlite), a MySQLError
// with a Number (go-sql-driver/mysql). It reads codes, never message text.
// Arguments are validated before any SQL, so the data errors are the last
// line: only the codes of text the caller sent (bad encoding, over-long)
// blame the caller.
func mapError(err error) error {
	err = fault.Mark(err, classify(err))
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "53200" { // out_of_memory, from the lock table
		return fmt.Errorf("%w (%s)", err, check.LockTableFull)
	}
	return err
}

// classify returns the sentinel that err means, or nil: by the code of the
// database when it reported one (for PostgreSQL see fault.State), else
// ErrUnavailable for a connection that broke or could not be made (see
// fault.Lost), which every driver reports so.
func classify(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		return fault.State(pgErr.SQLState())
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
	switch n := mysqlNumber(err); {
	case n == mysqlDeadlock || n == mysqlLockWaitTimeout:
		return taskapi.ErrConflict
	case mysqlUnavailable[n]:
		return taskapi.ErrUnavailable
	case mysqlDenied[n]:
		return taskapi.ErrPermission
	case n != 0: // another error of the server's
		return nil
	}
	if fault.Lost(err) {
		return taskapi.ErrUnavailable
	}
	return nil
}

// statementTimeout reports whether err is a statement that the server's
// statement timeout stopped: PostgreSQL's 57014 (statement_timeout),
// MariaDB's 1969 (max_statement_time), MySQL's 3024 (max_execution_time).
func statementTimeout(err error) bool {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		return pgErr.SQLState() == "57014"
	}
	n := mysqlNumber(err)
	return n == mariadbStatementTimeout || n == mysqlQueryTimeout
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
	switch e := err.(type) { //nolint:errorlint // walks the chain itself, one link at a time
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

// pgDetail returns the Detail field of a PostgreSQL driver's error (pgx's
// PgError, a pointer to a struct with a SQLState method), or "": the type
// has no method that tells it, and the package imports no driver.
func pgDetail(err interface{ SQLState() string }) string {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if detail := v.Elem().FieldByName("Detail"); detail.IsValid() && detail.Kind() == reflect.String {
			return detail.String()
		}
	}
	return ""
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
	return fmt.Errorf("taskansi: %s: %w", fmt.Sprintf(format, args...), mapError(err))
}
