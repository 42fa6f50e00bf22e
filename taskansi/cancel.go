package taskansi

import (
	"context"
	"database/sql"
	"slices"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Canceller[DB] = (*Repository)(nil)

// Cancellation (migrations: postgres 00012, sqlite 00011, mysql 00009, which
// add the state 9, CANCELLED). A cancellation locks the tasks it cancels
// first, waiting for rows that others locked ({wait}), and checks their
// state again on the rows as they are then: a poll that marked a task
// Active meanwhile leaves it Active, a completion that came first leaves it
// completed, and a completion that comes after finds it Cancelled and is
// refused (completeLock reads only Active tasks). So a task ends with one
// of the two, never both. The locks are taken in sequence order, as
// completions take theirs. Where the dialect locks by points (MySQL, in a
// caller's transaction) CancelIdentifier reads its tasks without locks
// first and locks them by points (cancelLock), checking again that they are
// Ready.
//
// A cancellation needs no lock of the topic's polls (task_lock on MySQL):
// it only ends Ready, Active and Suspended tasks, which frees room under the topic's
// limits and capacity and never takes any. The tickets of a capacity on
// PostgreSQL may then fall short of the true room, which the next count
// finds (see capacity.go).
const (
	// cancelColumns are the columns of a locked task: the task, its state
	// and its owner (NULL for a Ready task).
	cancelColumns = `sequence, identifier, COALESCE(input, ''), state, COALESCE(owner, '')`
	// cancelLock locks the tasks of topic named by sequence ({list}) whose
	// state is one of {states}: READY, ACTIVE and SUSPENDED for Cancel,
	// READY for CancelIdentifier by points.
	cancelLock = `
SELECT ` + cancelColumns + ` FROM {task}{primary}
WHERE topic = ? AND sequence IN ({list}) AND state IN ({states})
ORDER BY sequence{wait}`
	// cancelIdentifierLock locks the Ready tasks of an identifier, deferred
	// ones included, reading task_keyed: "state IN (0, 1)" is the
	// predicate of SQLite's partial index word for word (see limits.go).
	cancelIdentifierLock = `
SELECT ` + cancelColumns + ` FROM {task}{keyedIndex}
WHERE topic = ? AND state IN (0, 1) AND state = 1 AND identifier = ?
ORDER BY sequence{wait}`
	// cancelIdentifierRead finds them without locking, for a locking read
	// by points.
	cancelIdentifierRead = `
SELECT sequence FROM {task}{keyedIndex}
WHERE topic = ? AND state IN (0, 1) AND state = 1 AND identifier = ?`
	// cancelSet cancels the locked tasks: descent raised before the state
	// (see queries.go), the output of the reason, completed on the clock of
	// completions; the owner stays.
	cancelSet = `
UPDATE {task}{primary} SET descent = {greatest}(state, descent), state = 9, output = ?, completed = {now}
WHERE topic = ? AND sequence IN ({list})`
	// cancelledOf reads which of the named tasks are Cancelled.
	cancelledOf = `
SELECT sequence FROM {task}{primary}
WHERE topic = ? AND sequence IN ({list}) AND state = 9
ORDER BY sequence`
)

// Cancel cancels the tasks of topic with the given sequences that are
// Ready, Active or Suspended and returns them, with the state each was
// in and the owner of those that were Active; a
// task in another state, or not in topic, is left as it is. It runs in a
// transaction of its own (a savepoint inside a caller's) that locks the
// tasks first (see cancelLock). ErrUnknownTopic when topic is not
// registered; no sequences is a no-op, whatever the topic. On PostgreSQL,
// when it cancels Active tasks, it notifies the schema's activation channel
// (taskpg.ActivationChannel) with the topic, so that their owners'
// runtimes reconcile at once, and when the repository's last poll of the
// topic found limits, the topic's tasks channel too (see freed): both
// delivered when the cancellation commits.
func (r *Repository) Cancel(ctx context.Context, db DB, topic, reason string, sequences ...int64) ([]taskapi.Cancellation, error) {
	if run, err := check.Cancel(topic, reason, sequences); !run {
		return nil, wrapf(err, "cancel tasks of %q", topic)
	}
	sequences = slices.Clone(sequences)
	slices.Sort(sequences)
	sequences = slices.Compact(sequences)
	var cancelled []taskapi.Cancellation
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) (err error) {
			locked, err := r.lockCancelled(ctx, tx, topic, sequences, taskapi.Active, taskapi.Ready, taskapi.Suspended)
			if err == nil {
				cancelled, err = r.cancel(ctx, tx, topic, reason, locked)
			}
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "cancel tasks of %q", topic)
	}
	return cancelled, nil
}

// CancelIdentifier cancels every Ready task of identifier in topic, deferred
// ones included, and returns them; its Active tasks run on. It runs in a
// transaction of its own (a savepoint inside a caller's) that locks the
// tasks first. ErrUnknownTopic when topic is not registered.
func (r *Repository) CancelIdentifier(ctx context.Context, db DB, topic, identifier, reason string) ([]taskapi.Cancellation, error) {
	if err := check.CancelIdentifier(topic, identifier, reason); err != nil {
		return nil, wrapf(err, "cancel the tasks of %q in %q", identifier, topic)
	}
	var cancelled []taskapi.Cancellation
	err := r.retrying(ctx, db, func(db DB) error {
		points := r.pointLocks(db)
		return r.atomic(ctx, db, func(tx DB) error {
			var locked []cancelRow
			if points {
				sequences, err := querySequences(ctx, tx, r.expand(r.q.cancelIdentifierRead), topic, identifier)
				if err != nil {
					return err
				}
				slices.Sort(sequences)
				if locked, err = r.lockCancelled(ctx, tx, topic, sequences, taskapi.Ready); err != nil {
					return err
				}
			} else {
				rows, err := tx.QueryContext(ctx, r.expand(r.q.cancelIdentifierLock), topic, identifier)
				if err != nil {
					return err
				}
				if locked, err = scanCancelRows(rows); err != nil {
					return err
				}
			}
			var err error
			cancelled, err = r.cancel(ctx, tx, topic, reason, locked)
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "cancel the tasks of %q in %q", identifier, topic)
	}
	return cancelled, nil
}

// Cancelled returns which of the given tasks of topic are Cancelled,
// ascending; none for a topic that is not registered.
func (r *Repository) Cancelled(ctx context.Context, db DB, topic string, sequences ...int64) ([]int64, error) {
	if err := check.Topic(topic); err != nil {
		return nil, wrapf(err, "read the cancelled tasks of %q", topic)
	}
	sequences = slices.Clone(sequences)
	slices.Sort(sequences)
	sequences = slices.Compact(sequences)
	var found []int64
	err := batch.Split(sequences, chunk, func(piece []int64) error {
		seqs, err := querySequences(ctx, db, r.expand(r.q.cancelledOf, "{list}", marks(len(piece))), appendArgs([]any{topic}, piece...)...)
		found = append(found, seqs...)
		return err
	})
	if err != nil {
		return nil, wrapf(err, "read the cancelled tasks of %q", topic)
	}
	return found, nil
}

// cancelRow is a task that a cancellation locked, with its state and owner.
type cancelRow struct {
	task  taskapi.Task
	state taskapi.State
	owner string
}

// lockCancelled locks the tasks of topic with sequences (ascending, each
// once) whose state is one of states (cancelLock), in pieces, and returns
// them in sequence order.
func (r *Repository) lockCancelled(ctx context.Context, tx DB, topic string, sequences []int64, states ...taskapi.State) ([]cancelRow, error) {
	var locked []cancelRow
	err := batch.Split(sequences, chunk, func(piece []int64) error {
		args := appendArgs([]any{topic}, piece...)
		for _, st := range states {
			args = append(args, int(st))
		}
		rows, err := tx.QueryContext(ctx, r.expand(r.q.cancelLock, "{list}", marks(len(piece)), "{states}", marks(len(states))), args...)
		if err != nil {
			return err
		}
		found, err := scanCancelRows(rows)
		locked = append(locked, found...)
		return err
	})
	return locked, err
}

// scanCancelRows reads the rows of cancelColumns.
func scanCancelRows(rows *sql.Rows) ([]cancelRow, error) {
	defer rows.Close()
	var found []cancelRow
	for rows.Next() {
		var (
			c     cancelRow
			state int
		)
		if err := rows.Scan(&c.task.Sequence, &c.task.Identifier, &c.task.Input, &state, &c.owner); err != nil {
			return nil, err
		}
		c.state = taskapi.State(state)
		found = append(found, c)
	}
	return found, rows.Err()
}

// cancel cancels the locked tasks of topic for reason and returns them;
// when there are none, it returns ErrUnknownTopic unless topic is
// registered. On PostgreSQL it notifies the owners of the Active ones (see
// Cancel).
func (r *Repository) cancel(ctx context.Context, tx DB, topic, reason string, locked []cancelRow) ([]taskapi.Cancellation, error) {
	if len(locked) == 0 {
		return nil, r.mustBeKnown(ctx, tx, topic)
	}
	sequences := make([]int64, len(locked))
	cancelled := make([]taskapi.Cancellation, len(locked))
	active := false
	for i, c := range locked {
		sequences[i] = c.task.Sequence
		cancelled[i].Task, cancelled[i].From = c.task, c.state
		if c.state == taskapi.Active {
			cancelled[i].Owner, active = c.owner, true
		}
	}
	output := taskapi.CancelOutput(reason)
	err := batch.Split(sequences, chunk, func(piece []int64) error {
		args := r.args(appendArgs([]any{output, now{}, topic}, piece...)...)
		_, err := tx.ExecContext(ctx, r.expand(r.q.cancelSet, "{list}", marks(len(piece))), args...)
		return err
	})
	if err == nil && active && r.dialect.partitioned {
		if _, err = tx.ExecContext(ctx, r.expand(r.wake.cancelled), topic); err == nil {
			err = r.freed(ctx, tx, topic)
		}
	}
	if err != nil {
		return nil, err
	}
	return cancelled, nil
}
