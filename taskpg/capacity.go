package taskpg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Capacitor[DB] = (*Repository)(nil)

// The capacity of a topic lives in its row of task_topic (NULL for none);
// migration 00010 tells how pushes are admitted against it.
const (
	capacitySet  = `UPDATE {schema}.task_topic SET capacity = NULLIF($2::bigint, 0) WHERE topic = $1`
	capacityRows = `SELECT topic, capacity FROM {schema}.task_topic WHERE capacity IS NOT NULL`
)

// SetCapacity sets the capacity of topic, 0 for none. Setting, changing or
// removing one waits for the pushes and polls of the topic under way, and
// holds theirs back until the call's transaction ends: it changes the
// triggers of the topic's partition.
func (r *Repository) SetCapacity(ctx context.Context, db DB, topic string, capacity int64) error {
	if err := check.Capacity(topic, capacity); err != nil {
		return wrapf(err, "set the capacity of %q to %d", topic, capacity)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := exec(ctx, db, r.fleetSQL(capacitySet), topic, capacity)
		if err == nil && tag.RowsAffected() == 0 {
			err = unregistered(topic)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "set the capacity of %q to %d", topic, capacity)
	}
	if capacity > 0 {
		r.capped.Store(topic, struct{}{})
	} else {
		r.capped.Delete(topic)
	}
	return nil
}

// Capacities returns the capacity of every registered topic that has one.
func (r *Repository) Capacities(ctx context.Context, db DB) (map[string]int64, error) {
	rows, _ := query(ctx, db, r.fleetSQL(capacityRows))
	capacities := map[string]int64{}
	var (
		topic    string
		capacity int64
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &capacity}, func() error {
		capacities[topic] = capacity
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "read capacities")
	}
	return capacities, nil
}

// admit stores creations in a topic that may have a capacity, in one round
// trip: the admitted push statement (see queries.go), then task_admit when
// the push found no room in the topic's allowances. The push turns
// taskrepo.admitting on until the transaction ends; only a push of
// taskpg's own transaction (pushOneAlone) has no other check.
// Inside a caller's transaction the round trip runs in a savepoint, so that
// a refused push leaves the transaction usable; elsewhere the round trip's
// implicit transaction rolls back. admit remembers whether the topic has a
// capacity.
func (r *Repository) admit(ctx context.Context, db DB, sql *pushStatements, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int32) ([]taskapi.Task, error) {
	stored, created := batch.Stored(insertion, creations)
	if revivals != nil && len(revivals) != len(stored) {
		return nil, fmt.Errorf("%d counts of revivals for %d tasks", len(revivals), len(stored))
	}
	rows := pushRows(stored, ordinals(created), revivals)
	ready := batch.Ready(created)
	a := &admission{rows: rows, insert: sql.admitted[insertion], args: append(rows.arrays(topic), ready),
		admit: []any{topic, ready}, capped: true}
	send := r.admitAppend
	switch {
	case insertion != taskapi.Append:
		send = r.admitChanging
	case rows.len() == 1:
		a.insert, a.args = sql.admittedOne, append(rows.row(topic, 0), ready)
	}
	var err error
	if scopeOf(db) == inside {
		err = atomic(ctx, db, func(tx DB) error { return send(ctx, tx, topic, a) })
	} else {
		err = send(ctx, db, topic, a)
	}
	if err != nil {
		return nil, overCapacity(err, topic)
	}
	if a.capped {
		r.capped.Store(topic, struct{}{})
	} else {
		r.capped.Delete(topic)
	}
	return storedTasks(stored, a.sequences)
}

// An admission is a push into a topic that may have a capacity: its
// statement and arguments, those of task_admit, and what they returned.
// task_admit runs only when the push found no allowance with room, and
// returns whether the topic has a capacity; capped stays true otherwise.
type admission struct {
	rows        taskRows
	insert      string
	args, admit []any
	sequences   []int64
	capped      bool // task_admit found a capacity
}

// admitAppend sends an Append and task_admit as pgx's statements, which
// may be prepared with generic plans, as appendRows does.
func (r *Repository) admitAppend(ctx context.Context, db DB, _ string, a *admission) error {
	return alone(ctx, db, func(ctx context.Context, db DB) error {
		b := &pgx.Batch{}
		b.Queue(a.insert, a.args...).Query(func(result pgx.Rows) (err error) {
			a.sequences, err = collectSequences(result, a.rows.len())
			return err
		})
		b.Queue(r.q.admit, a.admit...).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&a.capped}, func() error { return nil })
			return err
		})
		return db.SendBatch(ctx, b).Close()
	})
}

// admitChanging sends the push of an insertion that changes older tasks,
// after the locks of its identifiers (see insertRows), and task_admit, as
// a pipeline, planned for its arguments.
func (r *Repository) admitChanging(ctx context.Context, db DB, topic string, a *admission) error {
	var sequence int64
	steps := append(r.identifierLocks(topic, a.rows.identifiers),
		step{sql: a.insert, args: a.args, dest: []any{&sequence},
			each: func() error { a.sequences = append(a.sequences, sequence); return nil }},
		step{sql: r.q.admit, args: a.admit, dest: []any{&a.capped}, each: func() error { return nil }})
	return pipeline(ctx, db, steps...)
}

// unadmitted reports whether a push failed for want of admission: it stored
// nothing (an unknown topic, or one with a capacity), or met the trigger of
// a topic with a capacity (TR002), or found no partition (23514, which is
// the same for pushOneAlone).
func unadmitted(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "TR002" || pgErr.Code == "23514" && pgErr.ConstraintName == ""
	}
	return errors.Is(err, taskapi.ErrUnknownTopic)
}

// overCapacity returns err as a *taskapi.CapacityError when task_admit
// refused the push (TR001, whose DETAIL is the capacity and the count).
func overCapacity(err error, topic string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "TR001" {
		return err
	}
	figures := strings.Fields(pgErr.Detail)
	if len(figures) != 2 {
		return err
	}
	capacity, cErr := strconv.ParseInt(figures[0], 10, 64)
	count, nErr := strconv.ParseInt(figures[1], 10, 64)
	if cErr != nil || nErr != nil {
		return err
	}
	return &taskapi.CapacityError{Topic: topic, Capacity: capacity, Count: count}
}
