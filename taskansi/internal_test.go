package taskansi

import (
	"errors"
	"fmt"
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

func (e sqlStateError) Error() string    { return "pgx" }
func (e sqlStateError) SQLState() string { return string(e) }

// MySQLError has the shape of go-sql-driver's error, whose number no method
// tells.
type MySQLError struct {
	Number  uint16
	Message string
}

func (e *MySQLError) Error() string { return e.Message }

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
