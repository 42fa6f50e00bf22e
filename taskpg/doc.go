// Package taskpg is the PostgreSQL implementation of taskrepo on pgx/v5.
//
// A Repository implements taskapi.Repository[DB], where DB is a
// *pgxpool.Pool, a *pgx.Conn or a pgx.Tx. Pass a transaction to make a call
// part of your own unit of work; pass a pool or a connection to let each call
// commit on its own. The repository never commits or rolls back a caller's
// transaction.
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
// writes nothing otherwise. The few calls that need several statements
// (revivals that push new tasks, PurgeAll, an Append of many tasks, which
// draws their sequences and then copies them in) run them inside a
// transaction of their own, which pgx turns into a savepoint inside a
// caller's transaction.
// An error of the server itself (a lost connection, a cancelled statement, a
// deadlock) aborts the caller's transaction as PostgreSQL always does.
//
// # Concurrency
//
// By default, polls skip rows locked by concurrent transactions (FOR UPDATE
// SKIP LOCKED), and so do the insertion modes when they mark or delete older
// tasks, revivals by state and Expire. WithExclusive turns skipping off for a
// single consumer, which then waits for such locks instead.
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
// # Statistics
//
// PostgreSQL plans the queries from the statistics of each partition, which
// autovacuum gathers soon after a topic gets its first tasks. After loading
// many tasks into a new topic, call Refresh to gather them at once. Polls and
// completions do not depend on it: their statements are written so that the
// planner keeps them on their indexes with missing or stale statistics, and
// they are planned on every call (never from a prepared statement's generic
// plan, which fits the table as it was when the plan was made). A
// conditional poll sends the lock and the poll in one round trip on pgx's
// own types; on any other implementation of DB it runs them in a
// transaction of its own, a few round trips more.
package taskpg
