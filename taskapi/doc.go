// Package taskapi is the contract of taskrepo: the types, enums, errors and
// interfaces that every task repository implements, plus a few generic helpers
// built on top of them.
//
// taskapi holds no SQL and imports no driver. The PostgreSQL implementation is
// in package taskpg; the portable database/sql one is in package taskansi.
//
// Every repository method takes a context first and the caller's database
// handle second (a transaction, a connection or a pool). A repository never
// commits or rolls back the caller's transaction, and each call is atomic:
// when it returns an error it has changed nothing and the caller's
// transaction is still usable.
//
// Conditions that callers branch on are reported with the sentinel errors
// ErrUnknownTopic, ErrUnknownOwner, ErrNotActive, ErrStateMismatch,
// ErrInvalidArgument, ErrConflict and ErrUnavailable; test for them with
// errors.Is. A *StateError, reached with errors.As, names the tasks that
// made a Complete, ReviveTasks or Reassign fail.
//
// Beyond Repository, the implementations offer Activator, Leader,
// Scheduler, Roster, Clock (the database's time) and Settler (bulk
// changes bounded by a completion time, for operators' confirmations). A Term that Leader
// issued is a PollOption as well: a poll under it claims tasks only while
// the term is current, and holds off the next term until its transaction
// ends.
package taskapi
