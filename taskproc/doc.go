// Package taskproc is the consumer runtime of taskrepo: the poll loops, the
// limits on concurrency, buffering and composite steps that a consumer
// service would otherwise write by hand. It works with any repository of
// package taskapi (taskpg, taskansi on PostgreSQL, SQLite, MySQL).
//
// A process makes one Client, registers a Handler per topic and starts it:
//
//	repo, _ := taskpg.New("billing-" + hostname)
//	client, _ := taskproc.New(repo, taskpg.Transact(pool))
//	client.Handle("invoices", taskproc.Sequential(sendInvoice), taskproc.WithSize(100))
//	client.Start(ctx)
//	defer client.Stop(stopCtx)
//
// Under it, a Manager runs the loop of one topic: it acquires a slot of its
// Limiter, polls up to size tasks in a transaction of its own (with its
// order and condition), and hands the Batch to the handler; it polls again
// at once while polls find work, waits its pause (or until Resume wakes it)
// when they do not, and backs off after a failed poll.
//
// # Settling batches
//
// Every Batch is settled exactly once, from any goroutine, before or after
// the handler returns: Complete records decisions in one transaction
// (CompleteTx also runs the caller's own writes in it), Fail ends every task
// with Failure, Release gives the tasks back as Ready. A second settlement is
// refused with ErrSettled. A handler that returns an error or panics fails
// its batch. A decision for a task that is not in the batch fails the whole
// batch; a task without a decision ends with Failure.
//
// # Handlers
//
// Sequential and Parallel decide task by task with a TaskFunc (Parallel keeps
// the tasks of one identifier in sequence order). Buffered hands batches to
// workers through a bounded buffer, so that the loop polls ahead with
// back-pressure. A Composite runs named steps that depend on each other,
// concurrently where they do not, and finishes with contexts that run in the
// completing transaction and may push follow-up tasks and junctions.
//
// # Retries, snoozes, deferred and periodic tasks
//
// A TaskFunc that returns Transient(err) ends its run, and the task comes
// back in its place after the RetryPolicy's backoff (WithRetry), until its
// attempts run out; its output logs every attempt (Attempts reads it).
// Snooze(d) gives the task back for d without counting an attempt. An idle
// loop wakes when the next deferred task of its topic is due. A Schedule
// (WithSchedule) pushes one task per period, fixed or cron, exactly once
// per period however many processes run it.
//
// # Limiters
//
// Without WithLimiter a topic's batches are not limited. NewBoundedLimiter
// (shared across topics), NewPriorityLimiter (by priority, FIFO among
// equals, with reserved minimums), NewTopicLimiter (a bounded wait queue
// per topic that refuses with ErrQueueFull) and Chain limit them; limits
// change at run time.
//
// # Cancellation
//
// A task cancelled while it runs (taskapi.Canceller) is CANCELLED in the
// database at once; the Client learns of it at its next reconciliation
// (WithReconcile), at once on PostgreSQL through the Notifier, and at the
// latest when the database refuses the task's settlement. Under
// Sequential, Parallel and ParallelTx the task's own context ends, with a
// cause (context.Cause) that wraps taskapi.ErrCancelled, and the batch's
// other tasks go on; under any other Handler the batch's context ends so.
// Nothing the handler decides for the task is written, nor retried: a
// handler that ignores the cancellation and succeeds has its success
// dropped and its completion's transaction rolled back for the task. The
// Observer hears EventCancelled, and Manager.Stats counts Cancelled.
//
// # Deadlines and the pool
//
// Every statement the runtime sends of its own has a deadline of half the
// expiry (WithExpiry), and its transactions are bounded on the server to
// the same (taskapi.Bounded, taskapi.Bounder): a connection that goes
// silent costs a statement, tried again on another connection, not a task
// held under a live owner. A completion function's own run is not
// bounded. Each run of a completion function whose transaction did not
// commit is an attempt of the retry policy; after MaxAttempts the tasks
// fail with the last error. A handler that holds connections while its
// functions run (ParallelTx, a Composite's contexts) must fit in the pool
// beside two that the runtime keeps for its own work: Start refuses it
// otherwise, naming the numbers.
//
// # Stopping
//
// Stop is staged: polling stops at once, then Stop waits for the batches in
// flight. When its context ends first, it cancels their contexts, waits a
// grace (WithGrace) and releases what is still unsettled back to Ready: the
// tasks were interrupted, not failed, and a late settlement is refused.
//
// # Observing
//
// An Observer hears of every batch polled, dispatched, completed, failed or
// released, of empty and failed polls, wake-ups and a loop's death; the
// runtime logs through log/slog (WithLogger); Manager.Stats counts.
package taskproc
