package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Capacitor[DB] = (*Repository)(nil)

// The capacity of a topic lives in its row of task_topic, NULL for none
// (migrations: postgres 00010, sqlite 00009, mysql 00007). On PostgreSQL
// setting it is a plain UPDATE too: the schema's trigger adds or drops what
// the admission and the topic's partition need, for taskpg and taskansi
// alike (postgres 00013 too).
const (
	capacitySet  = `UPDATE {topic} SET capacity = ? WHERE topic = ?`
	capacityRows = `SELECT topic, capacity FROM {topic} WHERE capacity IS NOT NULL`
)

// Admission of the pushes into a topic with a capacity (see admissionKind),
// after the statement that locks the topic's row has read its capacity
// (pushTopic). The count matches the predicates of the partial indexes
// task_ready and task_deferred (SQLite; MySQL reads task_due for both), and
// where it must see the latest commits it is a locking read ({latest}: see
// admit).
const (
	// admitTurn locks the row of a topic exclusively (admitTopicRow): the
	// pushes into a topic with a capacity take turns.
	admitTurn  = `SELECT capacity FROM {topic} WHERE topic = ?{wait}`
	admitCount = `
SELECT (SELECT COUNT(*) FROM {task} WHERE topic = ? AND state = 1 AND not_before IS NULL{latest})
     + (SELECT COUNT(*) FROM {task} WHERE topic = ? AND state = 1 AND not_before IS NOT NULL{latest})`
	// admitting turns taskrepo.admitting on ('on') or off (''), for the
	// rest of the transaction or until the savepoint rolls back; admitCall
	// admits the Ready tasks once stored, or fails with SQLSTATE TR001
	// (admitFunction, migrations 00010, 00013 and 00015 of PostgreSQL).
	admitting = `SELECT set_config('taskrepo.admitting', ?, true)`
	admitCall = `SELECT {admit}(?, CAST(? AS bigint))`
)

// SetCapacity sets the capacity of topic, at least 1; 0 removes it. It runs
// in a transaction of its own (a savepoint inside a caller's), since on
// PostgreSQL it changes the triggers of the topic's partition, which waits
// for the pushes and polls of the topic under way: a failure there leaves a
// caller's transaction usable.
func (r *Repository) SetCapacity(ctx context.Context, db DB, topic string, capacity int64) error {
	if err := check.Capacity(topic, capacity); err != nil {
		return wrapf(err, "set the capacity of %q to %d", topic, capacity)
	}
	var value any // NULL: none
	if capacity > 0 {
		value = capacity
	}
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			n, err := affected(tx.ExecContext(ctx, r.fleetSQL(capacitySet), value, topic))
			if err == nil && n == 0 {
				// MySQL counts the rows changed, not the rows found: a
				// capacity set again changes nothing.
				err = r.mustBeKnown(ctx, tx, topic)
			}
			return err
		})
	})
	if err != nil {
		return wrapf(err, "set the capacity of %q to %d", topic, capacity)
	}
	r.remember(topic, capacity > 0)
	return nil
}

// Capacities returns the capacity of every registered topic that has one.
func (r *Repository) Capacities(ctx context.Context, db DB) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, r.fleetSQL(capacityRows))
	if err != nil {
		return nil, wrapf(err, "read capacities")
	}
	capacities := map[string]int64{}
	err = forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic    string
			capacity int64
		)
		err := scan(&topic, &capacity)
		capacities[topic] = capacity
		return err
	})
	if err != nil {
		return nil, wrapf(err, "read capacities")
	}
	return capacities, nil
}

// remember notes whether topic has a capacity, for the pushes that take
// turns on its row (see lockTopic).
func (r *Repository) remember(topic string, capped bool) {
	if capped {
		r.capped.Store(topic, struct{}{})
	} else {
		r.capped.Delete(topic)
	}
}

// lockTopic locks the row of topic with statement (pushTopic, or one of
// wakeUps that also notifies) and returns its capacity, which stays until
// the transaction ends; ErrUnknownTopic when topic is not registered. Where
// the pushes into a topic with a capacity take turns on its row
// (admitTopicRow), the row of a topic known to have one is locked
// exclusively at once; when the shared lock finds one, it is raised. Two
// pushes that raise theirs at once deadlock (ErrConflict, retried), and the
// one that runs again knows the topic.
func (r *Repository) lockTopic(ctx context.Context, tx DB, statement, topic string) (sql.NullInt64, error) {
	turns := r.dialect.admission == admitTopicRow
	_, known := r.capped.Load(topic)
	if turns && known {
		statement = r.q.admitTurn
	}
	var capacity sql.NullInt64
	err := tx.QueryRowContext(ctx, r.expand(statement), topic).Scan(&capacity)
	if errors.Is(err, sql.ErrNoRows) {
		return capacity, taskapi.ErrUnknownTopic
	}
	if err != nil || !turns {
		return capacity, err
	}
	if known != capacity.Valid {
		r.remember(topic, capacity.Valid)
	}
	if !capacity.Valid || known {
		return capacity, nil
	}
	return capacity, tx.QueryRowContext(ctx, r.expand(r.q.admitTurn), topic).Scan(&capacity)
}

// openAdmission readies the insert of a push into a topic with a capacity:
// on PostgreSQL it turns taskrepo.admitting on, without which the trigger
// of the topic's partition refuses the rows (SQLSTATE TR002).
func (r *Repository) openAdmission(ctx context.Context, tx DB, capacity sql.NullInt64) error {
	if !capacity.Valid || r.dialect.admission != admitFunction {
		return nil
	}
	_, err := tx.ExecContext(ctx, r.expand(r.q.admitting), "on")
	return err
}

// admit admits the tasks just stored in a topic with a capacity, in states,
// in the push's transaction: it fails with a *taskapi.CapacityError when the
// topic's Ready tasks, deferred ones included, are over its capacity, and
// the push's transaction or savepoint rolls back. On PostgreSQL task_take
// decides, as for taskpg. Elsewhere the pushes of the topic took turns
// (lockTopic, or SQLite's single writer), and a count sees every push
// before: a plain read in a transaction of the repository's own (READ
// COMMITTED on MySQL), a locking read in a caller's transaction on MySQL
// (points), whose snapshot under REPEATABLE READ would miss the pushes
// committed since it began. That read locks the topic's Ready tasks
// (polls skip them) until the caller's transaction ends.
func (r *Repository) admit(ctx context.Context, tx DB, topic string, capacity sql.NullInt64, states []taskapi.State, points bool) error {
	if !capacity.Valid {
		return nil
	}
	ready := batch.Ready(states)
	if r.dialect.admission == admitFunction {
		return r.admitByFunction(ctx, tx, topic, ready)
	}
	if ready == 0 {
		return nil // Suspended tasks take no room
	}
	query := r.q.admitCount
	if points {
		query = r.q.admitCountLocking
	}
	var count int64
	if err := tx.QueryRowContext(ctx, r.expand(query), topic, topic).Scan(&count); err != nil {
		return err
	}
	if count > capacity.Int64 {
		return &taskapi.CapacityError{Topic: topic, Capacity: capacity.Int64, Count: count}
	}
	return nil
}

// admitByFunction calls task_take with the number of Ready tasks stored,
// if any, and turns taskrepo.admitting off again, so that the rest of a
// caller's transaction inserts no task unadmitted.
func (r *Repository) admitByFunction(ctx context.Context, tx DB, topic string, ready int) error {
	if ready > 0 {
		var capped bool
		if err := tx.QueryRowContext(ctx, r.expand(r.q.admitCall), topic, ready).Scan(&capped); err != nil {
			return overCapacity(err, topic)
		}
	}
	_, err := tx.ExecContext(ctx, r.expand(r.q.admitting), "")
	return err
}

// overCapacity returns err as a *taskapi.CapacityError when task_take
// refused the push: SQLSTATE TR001, whose DETAIL is the capacity and the
// count.
func overCapacity(err error, topic string) error {
	var pgErr interface{ SQLState() string }
	if !errors.As(err, &pgErr) || pgErr.SQLState() != "TR001" {
		return err
	}
	var capacity, count int64
	if _, scanErr := fmt.Sscanf(pgDetail(pgErr), "%d %d", &capacity, &count); scanErr != nil {
		return err
	}
	return &taskapi.CapacityError{Topic: topic, Capacity: capacity, Count: count}
}
