// Package fault classifies the failures of databases that taskpg and
// taskansi see alike: the SQLSTATEs of PostgreSQL, which both speak to,
// the failures of connections that carry no code of a database, and what a
// transaction function reports when its transaction failed. Each backend's
// mapError reads its drivers' errors and asks here, so that the two name
// every failure with the same sentinel.
package fault

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// State returns the sentinel of taskapi that a PostgreSQL SQLSTATE means,
// or nil:
//   - ErrConflict: the server aborted the statement to resolve a conflict
//     with a concurrent transaction (serialization_failure 40001,
//     deadlock_detected 40P01) or gave up waiting for its lock
//     (lock_not_available 55P03, after lock_timeout);
//   - ErrUnavailable: the connection failed, the server ended the session
//     or the statement, or it cannot serve the call now (class 08,
//     connection_exception; admin_shutdown 57P01, crash_shutdown 57P02,
//     cannot_connect_now 57P03 as it starts or shuts down,
//     too_many_connections 53300, also a role's CONNECTION LIMIT;
//     idle_in_transaction_session_timeout 25P03 and idle_session_timeout
//     57P05, which end the session; query_canceled 57014, as a
//     statement_timeout ends a statement; read_only_sql_transaction 25006,
//     a write refused by a standby or in a read-only transaction);
//   - ErrInvalidArgument: text the caller sent that the database cannot
//     store (character_not_in_repertoire 22021, untranslatable_character
//     22P05, string_data_right_truncation 22001). Arguments are validated
//     before any SQL, so these are the last line;
//   - ErrPermission: the role lacks a privilege (insufficient_privilege
//     42501).
func State(code string) error {
	switch code {
	case "42501":
		return taskapi.ErrPermission
	case "40001", "40P01", "55P03":
		return taskapi.ErrConflict
	case "57P01", "57P02", "57P03", "57P05", "53300", "25P03", "57014", "25006":
		return taskapi.ErrUnavailable
	case "22021", "22P05", "22001":
		return taskapi.ErrInvalidArgument
	}
	if strings.HasPrefix(code, "08") {
		return taskapi.ErrUnavailable
	}
	return nil
}

// Lost reports whether err tells of a connection that broke, was closed or
// could not be made, where no code of the database says so: a network
// error (net.Error; dial errors are), a stream that ended in the middle of
// a message (io.EOF, io.ErrUnexpectedEOF), or database/sql's
// driver.ErrBadConn and sql.ErrConnDone.
func Lost(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// Mark returns err with sentinel in its chain, ahead of it, unless
// sentinel is nil or err holds it already. An error that holds
// context.Canceled or context.DeadlineExceeded is not marked
// ErrUnavailable: the call's context ended, which its caller knows of, and
// what the driver did about it (a statement stopped, a connection cut)
// says nothing of the database.
func Mark(err, sentinel error) error {
	switch {
	case sentinel == nil || errors.Is(err, sentinel):
		return err
	case sentinel == taskapi.ErrUnavailable && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)): //nolint:errorlint // sentinel is a class: one of taskapi's values, never wrapped
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// Transient returns err marked (see Mark) with sentinel, the class that a
// backend gives err, when it is ErrConflict or ErrUnavailable, and err as
// it is otherwise. A transaction function reports so the failures of the
// statements that its caller ran in the transaction: a conflict or a lost
// connection ask for the transaction to be run again, whoever's statement
// met them, but the other classes (a unique or check violation on the
// caller's own tables) are the caller's own business, not taskapi's.
func Transient(err, sentinel error) error {
	if sentinel != taskapi.ErrConflict && sentinel != taskapi.ErrUnavailable { //nolint:errorlint // sentinel is a class: one of taskapi's values, never wrapped
		return err
	}
	return Mark(err, sentinel)
}

// Aborted returns what a transaction function reports when the function it
// ran failed with err, of class sentinel, and its transaction was rolled
// back: err marked as Transient does, and also ErrUnavailable, with undo in
// the message, when undo, the failure of the rollback, is not nil: a
// rollback fails when the connection broke under the transaction. undo
// must not be the driver's report of a transaction that had ended already.
func Aborted(err, sentinel, undo error) error {
	err = Transient(err, sentinel)
	if undo == nil {
		return err
	}
	return Mark(fmt.Errorf("%w (and its rollback failed: %v)", err, undo), taskapi.ErrUnavailable)
}
