// Package taskapi is the contract of taskrepo: the types, enums, errors and
// interfaces that every task repository implements, plus a few generic
// helpers built on top of them.
//
// taskapi holds no SQL and imports no driver. The PostgreSQL implementation
// is package [github.com/taskrepo/taskrepo/taskpg]; the portable
// database/sql one (PostgreSQL, MySQL, SQLite) is package
// [github.com/taskrepo/taskrepo/taskansi]. The runtime that processes the
// tasks, [github.com/taskrepo/taskrepo/taskproc], knows only this package.
//
// # The model
//
// A topic is a named queue, registered with [Repository.Initialize] (on
// PostgreSQL one partition of the task table each). A push to a topic that
// was never initialized fails with [ErrUnknownTopic].
//
// A task ([Task], [Info]) is one unit of work in a topic. It carries:
//
//   - a sequence: its number, from one database sequence shared by every
//     topic, increasing in the order of insertion; polls are FIFO by it
//     unless [LIFO] is given;
//   - an identifier: what the task is about (an order, a customer). The
//     same identifier may be pushed many times; the insertion modes
//     ([Insertion]: [Append], [Supersede], [Replace], [Delete]) say what
//     happens to its older tasks, and the poll conditions ([Condition])
//     keep one identifier from being processed twice at once;
//   - a reference: an optional second key, for the caller's own lookups
//     (the parent task of a pipeline, say);
//   - an input, and once completed an output.
//
// An owner is a repository instance, one per consumer process: it
// registers ([Repository.Register]), sends heartbeats
// ([Repository.Heartbeat]) and owns the tasks it polls. [Repository.Expire]
// turns the Active tasks of owners silent for too long into Expired ones.
//
// # States and results
//
// A task is in one [State] at a time:
//
//	Push ─► Ready ──Poll──► Active ──Complete──► Failed · Suspended · Filtered · Succeeded
//	         ▲  ▲             │  │                             │
//	         │  └──Release────┘  └──Expire──► Expired          │
//	         │                                   │             │
//	         └───────────── revival ◄────────────┴─────────────┘
//
// Ready tasks wait to be polled ([Source.Poll]); a poll makes them
// Active under its owner; [Source.Complete] ends them with a
// [Decision] whose [Result] (Success, Filter, Suspension or Failure, by
// growing severity: [Result.Merge] keeps the more severe) gives the
// completed state. A newer task of the same identifier pushed with
// Supersede or Replace makes older ones Redundant.
//
// A revival ([Revivification]) runs a finished or expired task again:
// [ReviveReset] makes it Ready again in place, the other modes mark it
// Recreated and push a new task that carries on. [Info.Revivals] counts
// how often a task, or the tasks it descends from, were revived.
//
// The task of a consumer that crashed expires, and until it is revived it
// blocks nothing under [SingularByIdentifier]: a later task of its
// identifier may run first. A poll given [AwaitRevival] waits behind an
// Expired task of the identifier as behind an Active one, so that with
// revival in place on (taskproc's WithRevival) an identifier's order holds
// across the crash. [SingularByIdentifierSuspendOnFailure] and
// [SingularByIdentifierSuspendUntilSuccess] always wait behind an Expired
// task.
//
// The descent of a task ([Info.Descent]) is the highest state it was in
// before its current one: a Succeeded task with descent Failed was revived
// after a failure.
//
// A junction ([Junction], [Juncture.Join]) releases a group of Suspended
// tasks to Ready once every identifier of the group has a matching task: a
// fan-in of work that waits for its parts.
//
// # Calls
//
// Every repository method takes a context first and the caller's database
// handle second (a transaction, a connection or a pool). A repository never
// commits or rolls back the caller's transaction, and each call is atomic:
// when it returns an error it has changed nothing and the caller's
// transaction is still usable.
//
// Conditions that callers branch on are reported with the sentinel errors
// [ErrUnknownTopic], [ErrUnknownOwner], [ErrNotActive], [ErrStateMismatch],
// [ErrInvalidArgument], [ErrConflict], [ErrUnavailable] and [ErrPermission]; test for them
// with errors.Is. A [*StateError], reached with errors.As, names the tasks
// that made a Complete, ReviveTasks or Reassign fail.
//
// Beyond [Repository], the implementations offer [Activator] (pause, drain,
// resume a topic), [Leader] (terms for exclusive consumption), [Scheduler]
// (periodic tasks), [Roster] (owners and what they hold), [Clock] (the
// database's time), [Auditor] (the operators' log), [Finder] (tasks by a
// prefix of their identifier or reference) and [CompletionBounded] (bulk changes
// bounded by a completion time, for operators' confirmations). A [Term]
// that Leader issued is a [PollOption] as well: a poll under it claims
// tasks only while the term is current, and holds off the next term until
// its transaction ends. [Leader.Hold] checks a term in a transaction of the
// caller's, and holds off the next term as a poll does: the last statement
// of a transaction that settles the work of a term, which so commits only
// while the term is current.
//
// # Transaction functions
//
// A transaction function (the Transact that taskproc takes, such as
// taskpg.Transact and taskansi.Transact) honours marks on the context it is
// given: [SingleStatement] (the work is one round trip that may run
// without BEGIN and COMMIT) and [Bounded] (bound the transaction on the
// server, so that one whose client went silent ends there and lets go of
// its locks); and it answers the question of [PoolSize] (how many
// connections its transactions draw from). A [Bounder] bounds the rest of
// a transaction that began unbounded. [Task.Key] is a key of a task that
// stays the same across every run of it, for the calls a handler makes
// outside the database.
package taskapi
