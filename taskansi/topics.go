package taskansi

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Initialize registers topic and reports whether it was newly registered. On
// PostgreSQL the schema's trigger creates the topic's partition apart and
// attaches it, which locks no other topic's tasks.
func (r *Repository) Initialize(ctx context.Context, db DB, topic string) (bool, error) {
	return r.execTopic(ctx, db, r.q.initialize, "initialize topic %q", topic)
}

// Destroy drops topic with all its tasks and the marks of its schedules,
// and reports whether the topic existed. The marks go first, in a
// transaction of its own (see atomic) that deletes the topic next. It ends
// the topic's term, so it waits for the transactions that hold the term
// (see Hold), as a Lead that takes a term over does: on PostgreSQL it takes
// the topic's term lock exclusively first; elsewhere the delete of the
// term's row, or the write lock, waits for them.
func (r *Repository) Destroy(ctx context.Context, db DB, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, "destroy topic %q", topic)
	}
	var n int64
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) (err error) {
			if r.dialect.locks == advisoryLocks {
				space, key := int64(lockkey.TermSpace), int64(r.termKey(topic))
				if _, err = tx.ExecContext(ctx, r.expand(r.q.advisoryExclusive), space, key); err != nil {
					return err
				}
			}
			if _, err = tx.ExecContext(ctx, r.expand(r.q.destroyMarks), topic); err == nil {
				n, err = affected(tx.ExecContext(ctx, r.expand(r.q.destroy), topic))
			}
			return err
		})
	})
	if err != nil {
		return false, wrapf(err, "destroy topic %q", topic)
	}
	return n > 0, nil
}

func (r *Repository) execTopic(ctx context.Context, db DB, query, format, topic string) (bool, error) {
	if err := check.Topic(topic); err != nil {
		return false, wrapf(err, format, topic)
	}
	n, err := r.written(ctx, db, r.expand(query), topic)
	if err != nil {
		return false, wrapf(err, format, topic)
	}
	return n > 0, nil
}

// Topics lists the registered topics, sorted.
func (r *Repository) Topics(ctx context.Context, db DB) ([]string, error) {
	names, err := r.allTopics(ctx, db)
	if err != nil {
		return nil, wrapf(err, "list topics")
	}
	return names, nil
}

// PurgeAll deletes all tasks of topic and keeps the topic.
func (r *Repository) PurgeAll(ctx context.Context, db DB, topic string) error {
	if err := check.Topic(topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	if _, err := r.written(ctx, db, r.expand(r.q.purgeAll), topic); err != nil {
		return wrapf(err, "purge all tasks of %q", topic)
	}
	return nil
}

// Purge deletes the tasks of topic within span in the given states (Failed to
// Cancelled when none are given) and returns how many.
func (r *Repository) Purge(ctx context.Context, db DB, topic string, span taskapi.Range, states ...taskapi.State) (int64, error) {
	return r.PurgeCompletedBy(ctx, db, topic, span, time.Time{}, states...)
}

// PurgeCompletedBy is Purge of the tasks completed at or before completedBy (a
// zero completedBy: all), for taskapi.CompletionBounded.
func (r *Repository) PurgeCompletedBy(ctx context.Context, db DB, topic string, span taskapi.Range, completedBy time.Time, states ...taskapi.State) (int64, error) {
	states, run, err := check.Purge(topic, span, states)
	if !run {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	query := r.expand(r.q.purge, "{list}", marks(len(states)))
	n, err := r.written(ctx, db, query, appendArgs([]any{topic, span.From, span.To, completedByParameter(completedBy)}, ordinals(states)...)...)
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q", topic)
	}
	return n, nil
}

// PurgeBefore purges, in the default states Failed to Cancelled, every task of
// topic created at or before t, and none created after it, in one statement:
// taskapi.PurgeBefore, which Go cannot instantiate from a *sql.DB.
func (r *Repository) PurgeBefore(ctx context.Context, db DB, topic string, t time.Time) (int64, error) {
	if err := check.Topic(topic); err != nil {
		return 0, wrapf(err, "purge tasks of %q before %v", topic, t)
	}
	query := r.expand(r.q.purgeBefore, "{list}", marks(len(check.DefaultPurged)))
	n, err := r.written(ctx, db, query, appendArgs([]any{topic, timeParameter(t)}, ordinals(check.DefaultPurged)...)...)
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q before %v", topic, t)
	}
	return n, nil
}

// analyzed reads what ANALYZE reported. MySQL reports a row per table
// (Table, Op, Msg_type, Msg_text), and a failure, such as a lock wait
// timeout, as a row of Msg_type "Error", not as an error of the statement.
func analyzed(rows *sql.Rows) error {
	columns, err := rows.Columns()
	if err != nil || len(columns) != 4 {
		rows.Close()
		return err
	}
	var failures []string
	err = forEachRow(rows, func(scan func(...any) error) error {
		var table, op, kind, text sql.NullString
		err := scan(&table, &op, &kind, &text)
		if strings.EqualFold(kind.String, "error") {
			failures = append(failures, table.String+": "+text.String)
		}
		return err
	})
	if err == nil && len(failures) > 0 {
		err = fmt.Errorf("ANALYZE TABLE failed: %s", strings.Join(failures, "; "))
	}
	return err
}

// errRefreshCommits is Refresh's error inside a caller's transaction on MySQL.
var errRefreshCommits = fmt.Errorf("ANALYZE TABLE would commit your transaction: call Refresh outside a transaction: %w", taskapi.ErrInvalidArgument)

// Refresh gathers the planner statistics of the tables (ANALYZE); on
// PostgreSQL those of the partitions of every topic, a few dozen at a time,
// through a function of the schema that has the right to. On MySQL, whose
// ANALYZE TABLE commits the transaction it runs in, it refuses a caller's
// transaction with ErrInvalidArgument.
func (r *Repository) Refresh(ctx context.Context, db DB) error {
	if r.dialect.refreshCommits {
		db, err := r.handle(ctx, db)
		if err != nil {
			return wrapf(err, "refresh statistics")
		}
		if inside(db) {
			return wrapf(errRefreshCommits, "refresh statistics")
		}
	}
	refresh := func(db DB, chunk []string) (int64, error) {
		rows, err := db.QueryContext(ctx, r.expand(r.q.refresh, "{list}", marks(len(chunk))), appendArgs(nil, chunk...)...)
		if err == nil {
			err = analyzed(rows)
		}
		return 0, err
	}
	var err error
	if r.dialect.partitioned {
		var names []string
		if names, err = r.allTopics(ctx, db); err == nil {
			_, err = r.writeChunks(ctx, db, names, refresh)
		}
	} else {
		err = r.retrying(ctx, db, func(db DB) error {
			_, err := refresh(db, nil)
			return err
		})
	}
	if err != nil {
		return wrapf(err, "refresh statistics")
	}
	return nil
}
