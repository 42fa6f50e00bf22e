package taskpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestMapError(t *testing.T) {
	for _, c := range []struct {
		err  *pgconn.PgError
		want error
	}{
		{&pgconn.PgError{Code: "23514"}, taskapi.ErrUnknownTopic},
		{&pgconn.PgError{Code: "23514", ConstraintName: "task_state_check"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22021"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22P05"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22001"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "23514", ConstraintName: "task_destroyed"}, taskapi.ErrUnknownTopic},
		{&pgconn.PgError{Code: "40001"}, taskapi.ErrConflict},
		{&pgconn.PgError{Code: "40P01"}, taskapi.ErrConflict},
		{&pgconn.PgError{Code: "55P03"}, taskapi.ErrConflict}, // lock_not_available
		{&pgconn.PgError{Code: "42501"}, taskapi.ErrPermission},
	} {
		err := wrapf(c.err, "call %d", 1)
		var pgErr *pgconn.PgError
		if !errors.Is(err, c.want) || !errors.As(err, &pgErr) || pgErr != c.err {
			t.Errorf("wrapf(%v) = %v, want %v wrapping the driver's error", c.err.Code, err, c.want)
		}
	}
	for _, err := range []error{&pgconn.PgError{Code: "22P02"}, &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "25P02"},
		&pgconn.PgError{Code: "42P01"}, pgx.ErrNoRows, errors.New("plain")} {
		if got := mapError(err); got != err {
			t.Errorf("mapError(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestMapErrorUnavailable checks the failures that mean the database could
// not be reached or the connection broke: the server's codes of the
// connection class, and pgx's reports of connections, which carry none.
func TestMapErrorUnavailable(t *testing.T) {
	t.Parallel()
	_, dialErr := pgconn.Connect(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=5") // nothing listens on port 1
	var connectErr *pgconn.ConnectError
	if !errors.As(dialErr, &connectErr) {
		t.Fatalf("connecting to a closed port: %v, want a *pgconn.ConnectError", dialErr)
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, err := range []error{
		&pgconn.PgError{Code: "08000"},                    // connection_exception
		&pgconn.PgError{Code: "08006"},                    // connection_failure
		&pgconn.PgError{Code: "08P01"},                    // protocol_violation
		&pgconn.PgError{Code: "57P01"},                    // admin_shutdown: pg_terminate_backend
		&pgconn.PgError{Code: "57P02"},                    // crash_shutdown
		&pgconn.PgError{Code: "57P03"},                    // cannot_connect_now
		&pgconn.PgError{Code: "53300"},                    // too_many_connections
		&pgconn.PgError{Code: "57014"},                    // query_canceled: statement_timeout
		&pgconn.PgError{Code: "57P05"},                    // idle_session_timeout
		&pgconn.PgError{Code: "25006"},                    // read_only_sql_transaction: a standby, a read-only role
		&pgconn.PgError{Code: "25P03", Severity: "FATAL"}, // idle_in_transaction_session_timeout
		dialErr,
		fmt.Errorf("failed to connect: %w", &pgconn.PgError{Code: "57P03"}),
		reset,
		fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("failed to write: %w", io.EOF),
		fmt.Errorf("rollback failed: %w", pgconn.ErrConnClosed),
	} {
		got := wrapf(err, "call")
		if !errors.Is(got, taskapi.ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("wrapf(%v) = %v, want %v wrapping it", err, got, taskapi.ErrUnavailable)
		}
		if errors.Is(got, taskapi.ErrConflict) || errors.Is(got, taskapi.ErrInvalidArgument) {
			t.Errorf("wrapf(%v) = %v, want no other sentinel", err, got)
		}
	}
	// A call whose context ended is the caller's doing, whatever the
	// driver did about it.
	for _, err := range []error{
		fmt.Errorf("%w (the server stopped the statement: %w)", context.Canceled, &pgconn.PgError{Code: "57014"}),
		fmt.Errorf("%w: %w", context.DeadlineExceeded, reset),
		fmt.Errorf("failed to connect: %w", context.DeadlineExceeded),
	} {
		if got := mapError(err); got != err {
			t.Errorf("mapError(%v) = %v, want it unchanged", err, got)
		}
	}
	// The server refused the connection for a reason of its own.
	refused := fmt.Errorf("failed to connect: %w", &pgconn.PgError{Code: "28P01"}) // invalid_password
	if got := mapError(refused); got != refused {
		t.Errorf("mapError(%v) = %v, want it unchanged", refused, got)
	}
}
