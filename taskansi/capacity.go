package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/internal/capacity"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Capacitor[DB] = (*Repository)(nil)

// The capacity of a topic lives in its row of task_topic: capacity, the
// topic's bound (NULL for none, capacity.Unbounded for a topic that bounds
// only its identifiers, whose pushes are admitted all the same), and
// identifier_capacity, the bound of each of its identifiers (migrations:
// postgres 00010 and 00016, sqlite 00009 and 00012, mysql 00007 and 00010).
// On PostgreSQL setting it is a plain UPDATE too: the schema's triggers add
// or drop what the admission and the topic's partition need, for taskpg and
// taskansi alike (postgres 00013 too).
const (
	capacitySet  = `UPDATE {topic} SET capacity = ?, identifier_capacity = ? WHERE topic = ?`
	capacityRows = `SELECT topic, capacity, identifier_capacity FROM {topic} WHERE capacity IS NOT NULL`
)

// Admission of the pushes into a topic with a capacity (see admissionKind),
// after the statement that locks the topic's row has read its capacity
// (pushTopic). The count matches the predicates of the partial indexes
// task_ready and task_deferred (SQLite; MySQL reads task_due for both), the
// count of an identifier reads its range of task_identifier (topic,
// identifier, sequence), and where they must see the latest commits they
// are locking reads ({latest}: see admit).
const (
	// admitTurn locks the row of a topic exclusively (admitTopicRow): the
	// pushes into a topic with a capacity take turns.
	admitTurn  = `SELECT capacity, identifier_capacity FROM {topic} WHERE topic = ?{wait}`
	admitCount = `
SELECT (SELECT COUNT(*) FROM {task} WHERE topic = ? AND state = 1 AND not_before IS NULL{latest})
     + (SELECT COUNT(*) FROM {task} WHERE topic = ? AND state = 1 AND not_before IS NOT NULL{latest})`
	admitKeyed = `SELECT COUNT(*) FROM {task} WHERE topic = ? AND identifier = ? AND state = 1{latest}`
	// admitting turns taskrepo.admitting on ('on') or off (''), for the
	// rest of the transaction or until the savepoint rolls back; admitCall
	// admits the Ready tasks once stored, given their identifiers, or fails
	// with SQLSTATE TR001 or TR004 (admitFunction, migrations 00010, 00013,
	// 00015 and 00016 of PostgreSQL).
	admitting = `SELECT set_config('taskrepo.admitting', ?, true)`
	admitCall = `SELECT {admit}(?, CAST(? AS bigint), CAST(? AS text[]))`
)

// bounds are the bounds of a topic as a push reads them from its row:
// valid when the topic has a capacity (see capacity.Columns).
type bounds struct {
	ready, perIdentifier sql.NullInt64
}

// SetCapacity sets the capacity of topic; the zero Capacity removes it. It
// runs in a transaction of its own (a savepoint inside a caller's), since
// on PostgreSQL it changes the triggers of the topic's partition, which
// waits for the pushes and polls of the topic under way: a failure there
// leaves a caller's transaction usable.
func (r *Repository) SetCapacity(ctx context.Context, db DB, topic string, c taskapi.Capacity) error {
	if err := check.Capacity(topic, c); err != nil {
		return wrapf(err, "set the capacity of %q to %+v", topic, c)
	}
	ready, perIdentifier := capacity.Columns(c)
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			n, err := affected(tx.ExecContext(ctx, r.fleetSQL(capacitySet), ready, perIdentifier, topic))
			if err == nil && n == 0 {
				// MySQL counts the rows changed, not the rows found: a
				// capacity set again changes nothing.
				err = r.mustBeKnown(ctx, tx, topic)
			}
			return err
		})
	})
	if err != nil {
		return wrapf(err, "set the capacity of %q to %+v", topic, c)
	}
	r.remember(topic, ready != nil)
	return nil
}

// Capacities returns the capacity of every registered topic that has one.
func (r *Repository) Capacities(ctx context.Context, db DB) (map[string]taskapi.Capacity, error) {
	rows, err := db.QueryContext(ctx, r.fleetSQL(capacityRows))
	if err != nil {
		return nil, wrapf(err, "read capacities")
	}
	capacities := map[string]taskapi.Capacity{}
	err = forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic                string
			ready, perIdentifier sql.NullInt64
		)
		err := scan(&topic, &ready, &perIdentifier)
		capacities[topic] = capacity.Of(ready, perIdentifier)
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
// wakeUps that also notifies) and returns its bounds, which stay until
// the transaction ends; ErrUnknownTopic when topic is not registered. Where
// the pushes into a topic with a capacity take turns on its row
// (admitTopicRow), the row of a topic known to have one is locked
// exclusively at once; when the shared lock finds one, it is raised. Two
// pushes that raise theirs at once deadlock (ErrConflict, retried), and the
// one that runs again knows the topic.
func (r *Repository) lockTopic(ctx context.Context, tx DB, statement, topic string) (bounds, error) {
	turns := r.dialect.admission == admitTopicRow
	_, known := r.capped.Load(topic)
	if turns && known {
		statement = r.q.admitTurn
	}
	var b bounds
	err := tx.QueryRowContext(ctx, r.expand(statement), topic).Scan(&b.ready, &b.perIdentifier)
	if errors.Is(err, sql.ErrNoRows) {
		return b, taskapi.ErrUnknownTopic
	}
	if err != nil || !turns {
		return b, err
	}
	if known != b.ready.Valid {
		r.remember(topic, b.ready.Valid)
	}
	if !b.ready.Valid || known {
		return b, nil
	}
	return b, tx.QueryRowContext(ctx, r.expand(r.q.admitTurn), topic).Scan(&b.ready, &b.perIdentifier)
}

// openAdmission readies the insert of a push into a topic with a capacity:
// on PostgreSQL it turns taskrepo.admitting on, without which the trigger
// of the topic's partition refuses the rows (SQLSTATE TR002).
func (r *Repository) openAdmission(ctx context.Context, tx DB, b bounds) error {
	if !b.ready.Valid || r.dialect.admission != admitFunction {
		return nil
	}
	_, err := tx.ExecContext(ctx, r.expand(r.q.admitting), "on")
	return err
}

// admit admits the tasks just stored in a topic with a capacity, whose
// Ready ones are of identifiers (one per task), in the push's transaction:
// it fails with a *taskapi.CapacityError when the topic's Ready tasks,
// deferred ones included, are over its bound, or else those of one of
// identifiers over theirs, and the push's transaction or savepoint rolls
// back. On PostgreSQL task_take decides, as for taskpg. Elsewhere the
// pushes of the topic took turns (lockTopic, or SQLite's single writer),
// and a count sees every push before: a plain read in a transaction of the
// repository's own (READ COMMITTED on MySQL), a locking read in a caller's
// transaction on MySQL (points), whose snapshot under REPEATABLE READ would
// miss the pushes committed since it began. That read locks the Ready
// tasks it counts (polls skip them) until the caller's transaction ends.
func (r *Repository) admit(ctx context.Context, tx DB, topic string, b bounds, identifiers []string, points bool) error {
	if !b.ready.Valid {
		return nil
	}
	if r.dialect.admission == admitFunction {
		return r.admitByFunction(ctx, tx, topic, identifiers)
	}
	if len(identifiers) == 0 {
		return nil // Suspended tasks take no room
	}
	query, keyed := r.q.admitCount, r.q.admitKeyed
	if points {
		query, keyed = r.q.admitCountLocking, r.q.admitKeyedLocking
	}
	var count int64
	if err := tx.QueryRowContext(ctx, r.expand(query), topic, topic).Scan(&count); err != nil {
		return err
	}
	if count > b.ready.Int64 {
		return &taskapi.CapacityError{Topic: topic, Capacity: b.ready.Int64, Count: count}
	}
	if !b.perIdentifier.Valid {
		return nil
	}
	for _, identifier := range distinct(identifiers) {
		if err := tx.QueryRowContext(ctx, r.expand(keyed), topic, identifier).Scan(&count); err != nil {
			return err
		}
		if count > b.perIdentifier.Int64 {
			return &taskapi.CapacityError{Topic: topic, Identifier: identifier, Capacity: b.perIdentifier.Int64, Count: count}
		}
	}
	return nil
}

// distinct returns identifiers sorted, each once.
func distinct(identifiers []string) []string {
	sorted := slices.Clone(identifiers)
	slices.Sort(sorted)
	return slices.Compact(sorted)
}

// admitByFunction calls task_take with the Ready tasks stored, if any, and
// turns taskrepo.admitting off again, so that the rest of a caller's
// transaction inserts no task unadmitted.
func (r *Repository) admitByFunction(ctx context.Context, tx DB, topic string, identifiers []string) error {
	if len(identifiers) > 0 {
		var capped bool
		err := tx.QueryRowContext(ctx, r.expand(r.q.admitCall), topic, len(identifiers), textArray(identifiers)).Scan(&capped)
		if err != nil {
			return overCapacity(err, topic)
		}
	}
	_, err := tx.ExecContext(ctx, r.expand(r.q.admitting), "")
	return err
}

// textArray returns the literal of a PostgreSQL text[] holding values,
// every element quoted: a parameter that every driver of taskansi passes as
// text (pgx's and lib/pq's alike).
func textArray(values []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(v) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// overCapacity returns err as a *taskapi.CapacityError when task_take
// refused the push: TR001 for the topic's bound, TR004 for an identifier's,
// whose DETAIL holds the figures (see capacity.Refused).
func overCapacity(err error, topic string) error {
	var pgErr interface{ SQLState() string }
	if !errors.As(err, &pgErr) {
		return err
	}
	if refused, ok := capacity.Refused(pgErr.SQLState(), pgDetail(pgErr), topic); ok {
		return refused
	}
	return err
}
