package taskansi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestBindNumbersPlaceholdersForPostgres(t *testing.T) {
	query := "SELECT a FROM t WHERE b = ? AND c IN (?, ?)"
	if got, want := dialects[Postgres].bind(query), "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"; got != want {
		t.Errorf("Postgres bind = %q, want %q", got, want)
	}
	for _, d := range []Dialect{SQLite, MySQL} {
		if got := dialects[d].bind(query); got != query {
			t.Errorf("%v bind = %q, want it unchanged", d, got)
		}
	}
}

func TestQuoteIdentifier(t *testing.T) {
	if got := dialects[Postgres].quoteIdentifier(`my "x"`); got != `"my ""x"""` {
		t.Errorf("Postgres quote = %s", got)
	}
	if got := dialects[MySQL].quoteIdentifier("my `x`"); got != "`my ``x```" {
		t.Errorf("MySQL quote = %s", got)
	}
}

func TestTimeParameterIsUTCWithinBounds(t *testing.T) {
	zone := time.FixedZone("UTC+5", 5*3600)
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 8, 4, 5, 123456789, zone), "2026-01-02 03:04:05.123456"},
		{time.Time{}, "1000-01-01 00:00:00.000000"},
		{time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), "9999-12-31 23:59:59.999999"},
	} {
		if got := timeParameter(c.in); got != c.want {
			t.Errorf("timeParameter(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestUTCTimeScansEveryForm(t *testing.T) {
	want := time.Date(2026, 1, 2, 3, 4, 5, 123000000, time.UTC)
	local := time.Date(2026, 1, 2, 3, 4, 5, 123000000, time.FixedZone("X", 3600)) // wall clock read as UTC
	for _, src := range []any{want, local, "2026-01-02 03:04:05.123000", []byte("2026-01-02 03:04:05.123")} {
		var got time.Time
		if err := (utcTime{&got}).Scan(src); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("Scan(%v) = %v, %v; want %v in UTC", src, got, err, want)
		}
	}
	got := time.Now()
	if err := (utcTime{&got}).Scan(nil); err != nil || !got.IsZero() {
		t.Errorf("Scan(nil) = %v, %v; want the zero time", got, err)
	}
	if err := (utcTime{&got}).Scan(42); err == nil {
		t.Error("Scan(42) succeeded")
	}
}

type sqlStateError string

func (e sqlStateError) Error() string    { return "pgx: SQLSTATE " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// MySQLError has the shape of go-sql-driver's error, whose number no method
// tells.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return fmt.Sprintf("Error %d: %s", e.Number, e.Message) }

type codeError int

func (e codeError) Error() string { return "sqlite" }
func (e codeError) Code() int     { return int(e) }

func TestMapError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want error
	}{
		{sqlStateError("22001"), taskapi.ErrInvalidArgument},
		{sqlStateError("22021"), taskapi.ErrInvalidArgument},
		{sqlStateError("40001"), taskapi.ErrConflict},
		{sqlStateError("40P01"), taskapi.ErrConflict},
		{codeError(sqliteConstraintTrigger), taskapi.ErrUnknownTopic},
		{codeError(sqliteTooBig), taskapi.ErrInvalidArgument},
		{codeError(sqliteBusy), taskapi.ErrConflict},
		{codeError(sqliteBusy | 2<<8), taskapi.ErrConflict}, // SQLITE_BUSY_SNAPSHOT
		{&MySQLError{Number: mysqlDeadlock}, taskapi.ErrConflict},
		{fmt.Errorf("in a savepoint: %w", &MySQLError{Number: mysqlLockWaitTimeout}), taskapi.ErrConflict},
		{sqlStateError("42501"), taskapi.ErrPermission},
		{&MySQLError{Number: 1142}, taskapi.ErrPermission},
		{&MySQLError{Number: 1044}, taskapi.ErrPermission},
		{&MySQLError{Number: 1227}, taskapi.ErrPermission},
	} {
		if got := mapError(c.err); !errors.Is(got, c.want) || !errors.Is(got, c.err) {
			t.Errorf("mapError(%v) = %v, want %v wrapping it", c.err, got, c.want)
		}
	}
	// The library's own data errors (a bad cast, a number out of range) and
	// a constraint the library checks before do not blame the caller.
	for _, err := range []error{errors.New("plain"), sqlStateError("22P02"), sqlStateError("22003"),
		sqlStateError("23514"), &MySQLError{Number: 1062}} {
		if got := mapError(err); got != err {
			t.Errorf("mapError(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestMapErrorUnavailable checks the failures that mean the database could
// not be reached or the connection broke, as every driver reports them: the
// codes of PostgreSQL's connection class, MySQL's numbers of a server that
// ended the session or the statement, and the errors of connections, which
// carry no code.
func TestMapErrorUnavailable(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, err := range []error{
		sqlStateError("08000"), sqlStateError("08006"), sqlStateError("08P01"),
		sqlStateError("57P01"), sqlStateError("57P02"), sqlStateError("57P03"),
		sqlStateError("53300"), sqlStateError("57014"), sqlStateError("57P05"),
		sqlStateError("25006"), sqlStateError("25P03"),
		&MySQLError{Number: 1040}, &MySQLError{Number: 1053}, &MySQLError{Number: 1317},
		&MySQLError{Number: 1927}, &MySQLError{Number: 2006}, &MySQLError{Number: 2013},
		&MySQLError{Number: 3024}, &MySQLError{Number: 1969}, // the statement timeouts of MySQL and MariaDB
		&MySQLError{Number: 1290}, &MySQLError{Number: 1792}, // read_only, a read-only transaction
		&MySQLError{Number: 1036}, &MySQLError{Number: 4031}, // innodb_read_only, MySQL's wait_timeout
		&MySQLError{Number: 1203}, &MySQLError{Number: 1226}, // the connections of a user
		fmt.Errorf("in a savepoint: %w", &MySQLError{Number: 1927}),
		reset, dial, fmt.Errorf("failed to connect: %w", dial),
		fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF),
		io.EOF, driver.ErrBadConn, sql.ErrConnDone,
	} {
		got := wrapf(err, "call")
		if !errors.Is(got, taskapi.ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("wrapf(%v) = %v, want %v wrapping it", err, got, taskapi.ErrUnavailable)
		}
		if errors.Is(got, taskapi.ErrConflict) || errors.Is(got, taskapi.ErrInvalidArgument) {
			t.Errorf("wrapf(%v) = %v, want no other sentinel", err, got)
		}
	}
	for _, c := range []struct {
		err  error
		want error
	}{
		{sqlStateError("55P03"), taskapi.ErrConflict}, // lock_not_available, as MySQL's lock wait timeout
		{&MySQLError{Number: mysqlLockWaitTimeout}, taskapi.ErrConflict},
	} {
		if got := mapError(c.err); !errors.Is(got, c.want) || errors.Is(got, taskapi.ErrUnavailable) {
			t.Errorf("mapError(%v) = %v, want %v only", c.err, got, c.want)
		}
	}
	// A call whose context ended is the caller's doing, whatever the driver
	// did about it; a server's other errors are no connection's failure,
	// and neither is SQLite's.
	for _, err := range []error{
		fmt.Errorf("%w (the server stopped the statement: %w)", context.Canceled, sqlStateError("57014")),
		fmt.Errorf("%w: %w", context.DeadlineExceeded, reset),
		&MySQLError{Number: 1062}, &MySQLError{Number: 1045}, // access denied at login: no privilege of a call
		sqlStateError("28P01"), sqlStateError("25P02"), codeError(10), // SQLITE_IOERR
	} {
		if got := mapError(err); got != err {
			t.Errorf("mapError(%v) = %v, want it unchanged", err, got)
		}
	}
}
