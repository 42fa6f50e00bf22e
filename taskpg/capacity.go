package taskpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/capacity"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Capacitor[DB] = (*Repository)(nil)

// The capacity of a topic lives in its row of task_topic: capacity, the
// topic's bound (NULL for none, capacity.Unbounded for a topic that bounds
// only its identifiers), and identifier_capacity, the bound of each of its
// identifiers (NULL for none); migrations 00010 and 00016 tell how pushes
// are admitted against them.
const (
	capacitySet  = `UPDATE {schema}.task_topic SET capacity = $2::bigint, identifier_capacity = $3::bigint WHERE topic = $1`
	capacityRows = `SELECT topic, capacity, identifier_capacity FROM {schema}.task_topic WHERE capacity IS NOT NULL`
	// admitKeyed is the count of a push (task_admit of migration 00016),
	// with the identifiers of its Ready tasks, one per task.
	admitKeyed = `SELECT {schema}.task_admit($1, $2, $3::text[])`
)

// SetCapacity sets the capacity of topic; the zero Capacity removes it.
// Setting, changing or removing one waits for the pushes and polls of the
// topic under way, and holds theirs back until the call's transaction
// ends: it changes the triggers of the topic's partition (and its index of
// Ready tasks by identifier, for a bound per identifier).
func (r *Repository) SetCapacity(ctx context.Context, db DB, topic string, c taskapi.Capacity) error {
	if err := check.Capacity(topic, c); err != nil {
		return wrapf(err, "set the capacity of %q to %+v", topic, c)
	}
	ready, perIdentifier := capacity.Columns(c)
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := exec(ctx, db, r.fleetSQL(capacitySet), topic, ready, perIdentifier)
		if err == nil && tag.RowsAffected() == 0 {
			err = unregistered(topic)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "set the capacity of %q to %+v", topic, c)
	}
	if ready != nil {
		r.capped.Store(topic, struct{}{})
	} else {
		r.capped.Delete(topic)
	}
	return nil
}

// Capacities returns the capacity of every registered topic that has one.
func (r *Repository) Capacities(ctx context.Context, db DB) (map[string]taskapi.Capacity, error) {
	rows, _ := query(ctx, db, r.fleetSQL(capacityRows))
	capacities := map[string]taskapi.Capacity{}
	var (
		topic                string
		ready, perIdentifier sql.NullInt64
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &ready, &perIdentifier}, func() error {
		capacities[topic] = capacity.Of(ready, perIdentifier)
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "read capacities")
	}
	return capacities, nil
}

// admit stores creations in a topic that may have a capacity (see
// queries.go and migration 00013): admitted by tickets when they are within
// the topic's bound, else counted by task_admit. Each attempt is a
// transaction of its own, or a savepoint inside a caller's transaction, so
// that an attempt past the bound takes back what it published (migration
// 00015). A refused push leaves a caller's transaction usable.
// admit remembers whether the topic has a capacity.
func (r *Repository) admit(ctx context.Context, db DB, sql *pushStatements, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int32) ([]taskapi.Task, error) {
	stored, created := batch.Stored(insertion, creations)
	if revivals != nil && len(revivals) != len(stored) {
		return nil, fmt.Errorf("%d counts of revivals for %d tasks", len(revivals), len(stored))
	}
	a := &admission{topic: topic, insertion: insertion, rows: pushRows(stored, ordinals(created), revivals),
		ready: batch.Ready(created), identifiers: batch.ReadyIdentifiers(stored, created), capped: true}
	err := attempt(ctx, db, func(db DB) error { return r.admitByTicket(ctx, db, sql, a) })
	if errors.Is(err, errPastBound) || ticketless(err) {
		err = attempt(ctx, db, func(db DB) error { return r.admitByCount(ctx, db, sql, a) })
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

// An admission is a push into a topic that may have a capacity, and what it
// returned: the sequences of the stored tasks, and whether task_admit found
// a capacity (capped stays true when tickets admitted the push).
type admission struct {
	topic     string
	insertion taskapi.Insertion
	rows      taskRows
	ready     int // the Ready tasks it stores, one ticket each
	// identifiers holds the identifier of each of them, which task_admit
	// counts against the bound of each identifier.
	identifiers []string
	sequences   []int64
	capped      bool
}

// errPastBound says that an admitted push stored nothing: its tickets were
// past the topic's bound, or the topic has no capacity or is unknown.
var errPastBound = errors.New("taskpg: no room by tickets")

// attempt runs call in a savepoint inside a caller's transaction, and else
// as it is: a round trip whose implicit transaction ends with it.
func attempt(ctx context.Context, db DB, call func(db DB) error) error {
	if scopeOf(db) == inside {
		return atomic(ctx, db, call)
	}
	return call(db)
}

// admitByTicket sends the admitted push, a statement of pgx for an Append
// (which may be prepared, as for a push without a capacity), else after the
// locks of its identifiers; errPastBound when it stored nothing.
func (r *Repository) admitByTicket(ctx context.Context, db DB, sql *pushStatements, a *admission) (err error) {
	switch {
	case a.insertion != taskapi.Append:
		a.sequences, err = r.insertRows(ctx, db, sql.admitted[a.insertion], a.topic, append(a.rows.arrays(a.topic), a.ready), a.rows)
	case a.rows.len() == 1:
		query := sql.admittedOne
		if scopeOf(db) == own {
			query = sql.admittedOneAlone
		}
		a.sequences, err = storedSequences(ctx, db, 1, query, a.rows.row(a.topic, 0)...) // one ticket
	default:
		a.sequences, err = storedSequences(ctx, db, a.rows.len(), sql.admitted[taskapi.Append], append(a.rows.arrays(a.topic), a.ready)...)
	}
	if err == nil && len(a.sequences) == 0 {
		return errPastBound
	}
	return err
}

// admitByCount sends the counted push, after the locks of its identifiers
// when it changes older tasks, and task_admit, as a pipeline.
func (r *Repository) admitByCount(ctx context.Context, db DB, sql *pushStatements, a *admission) error {
	a.sequences = a.sequences[:0]
	var steps []step
	if a.insertion != taskapi.Append {
		steps = r.identifierLocks(a.topic, a.rows.identifiers)
	}
	var sequence int64
	steps = append(steps,
		step{sql: sql.counted[a.insertion], args: a.rows.arrays(a.topic), dest: []any{&sequence},
			each: func() error { a.sequences = append(a.sequences, sequence); return nil }},
		step{sql: r.fleetSQL(admitKeyed), args: []any{a.topic, a.ready, a.identifiers}, dest: []any{&a.capped}, each: func() error { return nil }})
	return pipeline(ctx, db, steps...)
}

// ticketless reports whether an admitted push could not draw tickets: its
// role has no rights on the topic's sequences (given to the roles that may
// insert tasks when the capacity was set), or the topic has none (unknown,
// destroyed, or never capped), which the single push on a pool finds out
// by drawing (admittedOneAlone).
func ticketless(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42P01")
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
// refused the push: TR001 for the topic's bound, TR004 for an identifier's,
// whose DETAIL holds the figures (see capacity.Refused).
func overCapacity(err error, topic string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	if refused, ok := capacity.Refused(pgErr.Code, pgErr.Detail, topic); ok {
		return refused
	}
	return err
}
