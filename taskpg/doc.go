// Package taskpg is the PostgreSQL implementation of taskrepo on pgx/v5.
//
// A Repository implements taskapi.Repository[DB], where DB is a
// *pgxpool.Pool, a *pgxpool.Conn, a *pgx.Conn or a pgx.Tx. Pass a
// transaction to make a call part of your own unit of work; pass a pool or a
// connection to let each call commit on its own. The repository never
// commits or rolls back a transaction that it did not begin: it asks a
// connection for its transaction status, so that a transaction begun with a
// plain BEGIN is the caller's too.
//
// # Schema
//
// The tables come from the migrations in package migrations (folder
// postgres): every topic is a LIST partition of the task table. Every query
// names its tables with the schema given by WithSchema ("public" by default),
// so the session's search_path does not matter.
//
// # Atomicity
//
// Each call either succeeds entirely or changes nothing, and a caller's
// transaction stays usable after an error the call reports (ErrUnknownTopic,
// ErrNotActive, ErrStateMismatch, ...). Most calls are one statement written
// so that it is all-or-nothing by construction: it checks, for instance, that
// every named task is in the expected state before it changes any, and
// writes nothing otherwise. The calls that need several statements
// (revivals that push new tasks, PurgeAll, an Append of many tasks, which
// draws their sequences and then copies them in) run them as a unit: a
// transaction of their own, or a savepoint of their own inside a caller's
// transaction, which they release or roll back to even once the call's
// context is done (for at most ten seconds). Statements that must see what
// others committed before them (a conditional poll, a push that marks older
// tasks) go in one round trip after the statement that takes their lock.
// On a pool or a connection outside a transaction, every write runs in a
// transaction that the call begins (BEGIN goes in the round trip of its
// statements) and commits once they have succeeded: a statement that the
// server still runs after the call gave up on it (its context ended while
// the statement waited for a lock, and pgx dropped the connection) then
// commits nothing, where in an implicit transaction it would commit once
// the lock is free. An error of the server itself (a lost connection, a
// cancelled statement, a deadlock) aborts the caller's transaction as
// PostgreSQL always does. Deadlocks, serialization failures and locks not
// available are taskapi.ErrConflict; a call that ran in a transaction of
// its own retries them a few times first. A connection that could not be
// made, broke or was closed, a session the server ended (also for idling),
// a statement it cancelled (statement_timeout) and a refusal to serve (too
// many connections, a server starting or shutting down, a write in a
// read-only transaction, as on a standby) are taskapi.ErrUnavailable, never
// retried; a call whose context ended reports the context's error instead.
// Transact adds the same sentinels to the errors of the caller's function,
// and ErrUnavailable when the rollback after it fails.
//
// # Concurrency
//
// By default, polls skip rows locked by concurrent transactions (FOR UPDATE
// SKIP LOCKED), and so do the insertion modes when they mark or delete older
// tasks, revivals by state and Expire. WithExclusive turns skipping off for a
// single consumer, which then waits for such locks instead.
//
// Pushes that mark or delete older tasks (Replace, Supersede, Delete) of the
// same identifier in one topic take turns on advisory locks of the
// identifiers (of the topic, for a push of many identifiers), held until
// the transaction ends, so that neither leaves an older task live that it
// should have changed. Appends, polls and completions take none.
//
// Every statement on tasks names its topic and is planned for its arguments
// each time, so that it locks one partition; calls that span topics read or
// change a few dozen partitions per statement. With thousands of topics no
// call runs out of PostgreSQL's lock table (see docs/backends.md).
//
// Conditional polls (the SingularByIdentifier conditions) of one topic are
// serialized with a transaction-level advisory lock on the topic, taken
// before the poll statement so that the statement's snapshot sees every
// committed poll before it. Inside a caller's transaction this lock is held
// until the caller commits or rolls back, and other conditional polls of the
// topic wait for it; poll with a pool or a short transaction to let them run
// in turn quickly. Unconditional polls never take it. The conditions are
// exact under READ COMMITTED, PostgreSQL's default isolation level.
//
// # Terms
//
// Lead, Renew and Concede keep the terms of leaders in task_leader, a row
// per topic. A poll under a term (a taskapi.Term among its options) checks
// the term in its own statement: it claims only when the row is this
// owner's, with the term's number, not expired at the statement, and it
// locks the row FOR SHARE until its transaction ends, so that a Lead that
// takes the topic over, an update of the row, waits for it. A poll without
// a term runs the statement it always ran. Hold, the check that ends a
// transaction settling the work of a term, takes the topic's term lock, a
// transaction-level advisory lock, shared when the term is current, and
// reads the term again once it holds it, both in one round trip. A Lead
// that takes a term over, and Destroy, take that lock exclusively first, and
// so wait for every transaction that holds the term. PostgreSQL queues the
// requests of an advisory lock in their order, so that transactions holding
// a term in overlapping turns starve no take-over, and Renew and Concede do
// not take it at all; a row lock FOR SHARE would starve them, since a new
// share lock of a row passes an UPDATE that waits for it. Hold reads the
// latest commits under READ COMMITTED; in a REPEATABLE READ or SERIALIZABLE
// transaction it reads the transaction's snapshot, which does not show a
// term conceded and taken over after the snapshot was taken. Now reads the
// database's clock, the one every time of the schema is on.
//
// # Deferred tasks
//
// A task pushed with a NotBefore, or given one by Defer, is Ready but not
// polled before that time on the database's clock. A poll reads two partial
// indexes: the Ready tasks that were never deferred, in poll order, and the
// deferred ones that are due, by their time (the earliest first, the latest
// for LIFO). It never walks over the tasks that wait for their time, so
// that its cost does not depend on how many do. It locks up to size
// candidates from each index, takes the first size of them in poll order,
// and keeps the others locked (skipped by concurrent polls) until its
// transaction ends. NextDue reads the first entry after now of the index of
// deferred tasks: when a poll will next find one due.
//
// # Floors
//
// Each task a poll takes leaves an entry in the index of Ready tasks that
// no poll can use again, and every poll walks over such entries until a
// vacuum removes them. A consumer that keeps taking tasks (a thousand
// without an empty poll) starts its plain FIFO polls without a condition
// past them, from the topic's floor: the highest sequence it took, once
// no push that was open below it remains (see floor.go). A task that comes
// back to Ready with an older sequence through this repository (Release,
// a revival in place, Join, Defer that clears a time) resets the floor. One
// that comes back through another process, or a caller's INSERT of a
// sequence drawn long before, is polled by the next poll from the index's
// start: at least every 100 ms while the consumer is busy, and at once
// when a poll from the floor takes nothing. Until then, newer tasks may go
// first.
//
// # Schedules
//
// Mark and Advance keep the marks of periodic schedules in the task_schedule
// table, a row per topic and name. Advance is one compare-and-set
// statement: an UPDATE from the mark the caller read, which READ COMMITTED
// evaluates again on the row a concurrent advance committed, or an INSERT
// of the first mark unless the row exists; of concurrent advances from one
// mark one succeeds. Destroy deletes the topic's marks; PurgeAll keeps them.
//
// # Statistics
//
// PostgreSQL plans the queries from the statistics of each partition, which
// autovacuum gathers soon after a topic gets its first tasks. After loading
// many tasks into a new topic, call Refresh to gather them at once. Polls and
// completions do not depend on it: their statements are written so that the
// planner keeps them on their indexes with missing or stale statistics, and
// they are planned on every call (never from a prepared statement's generic
// plan, which fits the table as it was when the plan was made). In a round
// trip of its own (on a pool, or a connection outside a transaction),
// taskpg prepares them once per connection, as statements named
// taskrepo_…, and asks for custom plans for that round trip only; inside
// your transaction, and on a connection that lost one of them (DEALLOCATE,
// a pooler in transaction mode), it sends them unnamed. A
// conditional poll sends the lock and the poll in one round trip on pgx's
// own types; on any other implementation of DB it runs them in a
// transaction of its own, a few round trips more.
package taskpg
