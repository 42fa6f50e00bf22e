// Package taskansi is the portable implementation of taskrepo on
// database/sql, for PostgreSQL, SQLite and MySQL/MariaDB.
//
// A Repository implements taskapi.Repository[DB], where DB is a *sql.DB, a
// *sql.Conn or a *sql.Tx. Pass a transaction to make a call part of your own
// unit of work; pass a pool or a connection to let each call commit on its
// own. The repository never commits or rolls back a caller's transaction.
//
//	repo, err := taskansi.New(taskansi.SQLite, "worker-1")
//
// # Dialects
//
// The SQL of every call is written once; what differs between the databases
// (placeholders, inserting unless a key exists, RETURNING or the driver's
// last insert id, the locking clauses, the clock and the timestamps) is one
// description per dialect in dialect.go. The tables come from package
// migrations: migrations.Postgres (the partitioned schema that package taskpg
// uses too, so that the two packages share one database), migrations.SQLite
// and migrations.MySQL.
//
//   - Postgres: any database/sql driver of PostgreSQL, such as
//     github.com/jackc/pgx/v5/stdlib. Polls and insertion modes skip rows
//     that others locked (FOR UPDATE SKIP LOCKED); conditional polls and
//     pushes of identifiers take the advisory locks of taskpg. With many
//     topics, have the driver plan statements per call (pgx:
//     default_query_exec_mode=exec in the URL).
//   - SQLite: modernc.org/sqlite. SQLite has one writer at a time and no row
//     locks, so every call that reads and then writes takes the write lock
//     first and holds it until it ends: concurrent polls queue up rather than
//     run side by side, and never receive the same task. Open the database
//     with busy_timeout set (say _pragma=busy_timeout(10000)), preferably in
//     WAL mode (_pragma=journal_mode(WAL)), and with _txlock=immediate for
//     transactions of your own that write. Under load, give a process one
//     connection (db.SetMaxOpenConns(1)): its writers then queue in the
//     pool, in turn, where SQLite's busy handler lets newcomers overtake
//     the writers that sleep. The transactions that a call begins itself
//     on a *sql.DB of SQLite take turns within the process, first come
//     first served, so that calls given the pool wait for each other, not
//     for busy_timeout.
//   - MySQL: github.com/go-sql-driver/mysql on MySQL 8 or MariaDB 10.6 and
//     newer, with FOR UPDATE SKIP LOCKED. Names are VARBINARY columns
//     (compared byte by byte); conditional polls and pushes of identifiers
//     take turns on rows of task_lock. Statements that name tasks by
//     sequence read the primary key, and in a caller's transaction polls
//     read their candidates first and lock them by primary key, so that
//     InnoDB locks no gap under REPEATABLE READ. Transactions of the
//     repository's own run at READ COMMITTED; keep yours at READ COMMITTED
//     when they poll with a condition or push with Replace, Supersede or
//     Delete.
//
// # Polling
//
// A poll takes the Ready tasks that are due: those never deferred, and those
// whose NotBefore lies at or before the moment of the statement (the
// database's clock; on SQLite the process's, see clock.go). Its candidates
// come from two branches, each on an index of its own (on MySQL both on
// task_due): the tasks never deferred in sequence order, and the deferred
// ones that are due in the order of their times. Each branch locks up to the
// poll's size and the poll takes the first of both in poll order, so tasks
// that wait for their time cost a poll nothing, however many. When more
// deferred tasks are due than a poll takes, the earlier times go first; the
// rows that a branch locked and the poll did not take stay locked until the
// poll's transaction ends. Under the SingularByIdentifier conditions a
// deferred task keeps its place: it blocks the later tasks of its
// identifier like any Ready task. NextDue reads the first entry after now
// of the index of deferred tasks: when a poll will next find one due.
//
// # Terms
//
// Lead, Renew and Concede keep the terms of leaders in task_leader, a row
// per topic. A poll under a term (a taskapi.Term among its options) first
// reads the term's row, in the poll's transaction: it claims only when the
// row is this owner's, with the term's number, not expired at the
// statement, and it keeps the row from changing until the transaction ends
// (FOR SHARE, LOCK IN SHARE MODE), so that a Lead that takes the topic
// over waits for it. SQLite needs no lock: a poll holds the write lock,
// for which every Lead waits. Hold, the check that ends a transaction
// settling the work of a term, keeps the term so in the caller's
// transaction: on MySQL with the same shared lock of the row, which InnoDB
// queues behind a writer that waits for the row, so that transactions
// holding a term in overlapping turns keep Renew and Lead waiting for those
// before them only; on SQLite by the write lock, which it takes first; on
// PostgreSQL by taskpg's term lock, a transaction-level advisory lock on
// the topic that Hold takes shared, and a Lead that takes a term over, and
// Destroy, exclusively, since PostgreSQL lets a new share lock of a row
// pass an UPDATE that waits for the row (Renew and Concede take no term
// lock). On a *sql.DB Hold only reads the term. Hold reads the latest
// commits under READ COMMITTED; in a REPEATABLE READ transaction of
// PostgreSQL it reads the transaction's snapshot, which does not show a
// term conceded and taken over after the snapshot was taken. Now reads the
// database's clock (on SQLite the process's, as every write there).
//
// # Schedules
//
// Mark and Advance keep the marks of periodic schedules in the task_schedule
// table, a row per topic and name. Advance is one compare-and-set
// statement: an UPDATE from the mark the caller read, which PostgreSQL
// (under READ COMMITTED) and InnoDB evaluate again on the row a concurrent
// advance committed, or an insert of the first mark unless the row exists
// (INSERT IGNORE on MySQL); SQLite's single writer serializes them. Of
// concurrent advances from one mark one succeeds. Destroy deletes the
// topic's marks as a unit with the topic; PurgeAll keeps them.
//
// # Capacity
//
// SetCapacity bounds the Ready tasks, deferred ones included, that pushes
// and recreating revivals may leave in a topic (taskapi.Capacitor). The
// statement that locks a topic's row for a push reads the capacity and
// keeps it from changing until the push ends (FOR SHARE, LOCK IN SHARE
// MODE), so that SetCapacity waits for the pushes under way; a topic
// without a capacity pays nothing more. A push into a topic with one is
// admitted after its insert, in its transaction or savepoint, which a
// refusal (a *taskapi.CapacityError) rolls back:
//
//   - Postgres: as in package taskpg, with which it shares the capacity:
//     taskrepo.admitting on for the insert, then the schema's task_take
//     (see migrations.Postgres, 00010 and 00013), which admits the push by
//     tickets while they last, and else counts.
//   - SQLite: the single writer serializes the pushes; each counts the
//     topic's Ready tasks after its insert.
//   - MySQL: the pushes of a topic with a capacity take turns on its row,
//     which they lock exclusively (FOR UPDATE), and each counts the topic's
//     Ready tasks after its insert. A repository learns of a capacity from
//     the first push that finds it, whose shared lock is raised: two such
//     pushes at once may deadlock (ErrConflict, retried). In a caller's
//     transaction the count is a locking read, since REPEATABLE READ would
//     count from the transaction's snapshot: until the caller commits, the
//     topic's Ready tasks stay locked (polls skip them), as does the
//     topic's row, for which the topic's other pushes wait.
//
// # Limits
//
// SetLimits bounds the Active tasks of a topic, and of one identifier in it,
// across every process that polls it (taskapi.Regulator). Each poll reads
// the topic's limits by its primary key in its transaction, the one read
// that a topic without limits pays; a poll of a topic with limits counts
// the topic's Active tasks, takes no more than the limits leave room for,
// and under a limit per identifier picks its candidates identifier by
// identifier: the earliest due Ready tasks of each identifier below its
// limit (a loose scan of the identifiers of the topic's Ready tasks, then a
// read of each one's earliest), of which the first in poll order, locked by
// points. It never walks over the tasks of an identifier at its limit.
//
//   - Postgres: the trigger of the limited topic's partition keeps the
//     limits exactly (see migrations.Postgres, 00011), as for taskpg, and
//     may leave some of the candidates Ready: the poll returns the tasks
//     its update marked.
//   - SQLite: the single writer serializes the polls.
//   - MySQL: the polls of a topic with limits take turns on the topic's
//     row of task_lock, as conditional polls do, and count after the turn,
//     under READ COMMITTED; in a caller's transaction the count is a
//     locking read, since REPEATABLE READ would count from the
//     transaction's snapshot, and its locks, like the turn, are held until
//     the caller commits.
//
// # Cancellation
//
// Cancel, CancelIdentifier and Cancelled (taskapi.Canceller) end Ready and
// Active tasks for good, in the state Cancelled (migrations: postgres 00012,
// sqlite 00011, mysql 00009). A cancellation locks its tasks first, waiting
// for rows that others locked, and checks their state again once it holds
// them; a completion locks the same rows and reads only Active tasks: of a
// cancellation and a completion of one task, one wins and the other finds
// nothing to do (the completion fails with taskapi.ErrNotActive). A
// cancellation only frees room under limits and capacity, so it takes no
// turn with the polls or pushes of the topic. On PostgreSQL a cancellation
// of Active tasks notifies the activation channel (taskpg.ActivationChannel)
// with the topic, so that the owners' runtimes ask Cancelled at once, and,
// in a topic whose last poll found limits, the tasks channel too, so that
// the consumers waiting at a limit poll.
//
// # Atomicity
//
// Each call either succeeds entirely or changes nothing, and a caller's
// transaction stays usable after an error the call reports. Calls of more
// than one statement run inside a transaction of their own: begun with
// BeginTx on a *sql.DB or a *sql.Conn, a savepoint (SAVEPOINT, ROLLBACK TO
// SAVEPOINT, RELEASE SAVEPOINT) inside a caller's *sql.Tx, ended even once
// the call's context is done. Single-statement writes on a *sql.DB or a
// *sql.Conn run in a transaction of their own too, which the call commits
// once the statement has succeeded: run alone, a statement that waits for
// a lock when the call gives up on it would still commit once the lock is
// free, though the call reported an error. An error of the server itself
// (a lost connection, a deadlock) may abort a caller's transaction as the
// database does. Deadlocks, serialization failures, lock wait timeouts and
// SQLITE_BUSY are taskapi.ErrConflict; a call that ran in a transaction of
// its own retries them a few times first. A connection that could not be
// made or broke, a session the server ended (also for idling), a statement
// it stopped (a statement timeout) and a refusal to serve (too many
// connections, a write on a read-only server or in a read-only transaction)
// are taskapi.ErrUnavailable, never retried; a call whose context ended
// reports the context's error instead. go-sql-driver reports the first
// failure of a connection that broke as "invalid connection", with neither
// a number nor a type: that failure comes as it is, and the next statement
// on the connection fails with driver.ErrBadConn, ErrUnavailable. Transact
// adds the same sentinels to the errors of the caller's function, and
// ErrUnavailable when the rollback after it fails or the driver says the
// transaction's connection is closed.
//
// # Concurrency
//
// Rows are locked before they change: polls, insertion modes, revivals by
// state and Expire skip rows that concurrent transactions locked, unless
// WithExclusive; Complete, Reassign, ReviveTasks, Defer and the
// cancellations wait for them.
// Conditional polls (the SingularByIdentifier conditions) of one topic are
// serialized (on PostgreSQL with taskpg's advisory lock, on MySQL by locking
// the topic's row of task_lock, on SQLite by the single writer); inside a
// caller's transaction that lock is held until the caller commits.
package taskansi
