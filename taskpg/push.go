package taskpg

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/edge"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Push stores creations as tasks of topic, in one statement that also applies
// insertion to older tasks with the same identifiers. Unless wake-ups are
// off (see WithWakeUps), the first push of a topic in an interval also
// notifies TasksChannel with the topic, in that statement (DueChannel when
// a creation has a not-before time, in intervals of their own): the
// notification is delivered when the push commits, and not at all when it
// rolls back.
func (r *Repository) Push(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if run, err := check.Push(topic, insertion, creations); !run {
		return nil, wrapf(err, "push to %q", topic)
	}
	tasks, err := retrying(ctx, db, func() ([]taskapi.Task, error) {
		return r.insert(ctx, db, topic, insertion, creations, nil)
	})
	if err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	return tasks, nil
}

// copyThreshold is the number of tasks from which Append stores them with
// COPY rather than with an INSERT over arrays: COPY writes rows in bulk but
// takes more round trips.
const copyThreshold = 100

// insert stores valid creations, at least one, as insertion tells, and
// returns the stored tasks in creation order. revivals is nil for a push;
// a revival gives the count of revivals of each new task, with an insertion
// that stores every creation (not Delete). When it is the first push of the
// topic in the interval of wake-ups, it notifies the topic's channel.
func (r *Repository) insert(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int32) ([]taskapi.Task, error) {
	deferred := edge.Deferred(creations)
	stamp := r.wake.Claim(topic, deferred)
	sql := r.wake.statements(stamp != 0, deferred)
	var tasks []taskapi.Task
	var err error
	_, capped := r.capped.Load(topic)
	if !capped {
		tasks, err = r.store(ctx, db, sql, topic, insertion, creations, revivals)
	}
	if capped || unadmitted(err) {
		tasks, err = r.admit(ctx, db, sql, topic, insertion, creations, revivals)
	}
	if err != nil {
		r.wake.Forget(topic, deferred, stamp)
	}
	return tasks, err
}

// store stores valid creations, at least one, with the statements sql, as
// insert does.
func (r *Repository) store(ctx context.Context, db DB, sql *pushStatements, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int32) ([]taskapi.Task, error) {
	stored, created := batch.Stored(insertion, creations)
	if revivals != nil && len(revivals) != len(stored) {
		return nil, fmt.Errorf("%d counts of revivals for %d tasks", len(revivals), len(stored))
	}
	rows := pushRows(stored, ordinals(created), revivals)
	var sequences []int64
	var err error
	switch {
	case insertion != taskapi.Append:
		sequences, err = r.insertRows(ctx, db, sql.push[insertion], topic, rows.arrays(topic), rows)
	case len(stored) >= copyThreshold:
		sequences, err = r.copyIn(ctx, db, sql, topic, rows)
	case len(stored) == 1:
		sequences, err = r.insertOne(ctx, db, sql, topic, rows)
	default:
		sequences, err = r.appendRows(ctx, db, sql, topic, rows)
	}
	if err != nil {
		return nil, err
	}
	return storedTasks(stored, sequences)
}

// storedTasks returns the tasks of the stored creations, whose sequences a
// push returned in any order: none for an unknown topic.
func storedTasks(stored []taskapi.Creation, sequences []int64) ([]taskapi.Task, error) {
	switch {
	case len(sequences) == 0:
		return nil, taskapi.ErrUnknownTopic
	case len(sequences) != len(stored):
		return nil, fmt.Errorf("stored %d tasks of %d", len(sequences), len(stored))
	}
	slices.Sort(sequences) // ascending sequences follow creation order
	tasks := make([]taskapi.Task, len(stored))
	for i, c := range stored {
		tasks[i] = taskapi.Task{Sequence: sequences[i], Identifier: c.Identifier, Input: c.Input}
	}
	return tasks, nil
}

// appendRows appends tasks with one statement over arrays and returns their
// sequences, none for an unknown topic. It touches no other task, so it may
// come from a prepared statement's generic plan.
func (r *Repository) appendRows(ctx context.Context, db DB, sql *pushStatements, topic string, rows taskRows) ([]int64, error) {
	return storedSequences(ctx, db, rows.len(), sql.push[taskapi.Append], rows.arrays(topic)...)
}

// storedSequences runs query, a push that returns the sequences of the n
// tasks it stores, with args, and returns them, as a statement of pgx,
// which may be prepared; where db is a pool or a connection outside a
// transaction, guarded against ctx's end (see guard).
func storedSequences(ctx context.Context, db DB, n int, query string, args ...any) ([]int64, error) {
	var sequences []int64
	err := alone(ctx, db, func(ctx context.Context, db DB) (err error) {
		result, _ := db.Query(ctx, query, args...)
		sequences, err = collectSequences(result, n)
		return err
	})
	return sequences, err
}

// alone runs call, one round trip of pgx's statements (which may be
// prepared) on db: inside a caller's transaction as it is; where db is a
// pool or a connection outside a transaction, on a connection of its own,
// guarded against ctx's end (see guard).
func alone(ctx context.Context, db DB, call func(ctx context.Context, db DB) error) error {
	if scopeOf(db) != own {
		return call(ctx, db)
	}
	conn, release, err := connOf(ctx, db)
	switch {
	case err != nil:
		return err
	case conn == nil: // another implementation of DB
		return atomic(ctx, db, func(tx DB) error { return call(ctx, tx) })
	}
	defer release()
	return guard(ctx, conn, func(ctx context.Context) error { return call(ctx, conn) })
}

// insertRows runs statement, the push of an insertion mode that changes
// older tasks, with args, after the locks of the identifiers of rows: the
// two go in one round trip, the push planned for its arguments (it changes
// tasks of the topic's partition). It returns the sequences of the stored
// tasks, none for an unknown topic.
func (r *Repository) insertRows(ctx context.Context, db DB, statement, topic string, args []any, rows taskRows) ([]int64, error) {
	sequences := make([]int64, 0, rows.len())
	var sequence int64
	var steps []step
	if scopeOf(db) == own {
		steps = append(steps, noJIT)
	}
	steps = append(steps, r.identifierLocks(topic, rows.identifiers)...)
	steps = append(steps, step{
		sql: statement, args: args,
		dest: []any{&sequence}, each: func() error { sequences = append(sequences, sequence); return nil },
	})
	err := pipeline(ctx, db, steps...)
	return sequences, err
}

// noJIT turns JIT compilation off for the rest of a transaction of the
// push's own. Without statistics of the topic's partition, the planner
// prices a push of a thousand identifiers that looks up older tasks above
// jit_above_cost, and compiling the plan takes longer (some 9 ms) than
// running it. A caller's transaction keeps its own setting.
var noJIT = step{sql: "SET LOCAL jit = off"}

// identifierLocks returns the steps that take the locks by which pushes of
// identifiers that change older tasks serialize each other: a statement of
// their own before the push, so that the push's snapshot, taken once they
// are held, sees every such push that came first. They are held until the
// transaction ends.
func (r *Repository) identifierLocks(topic string, identifiers []string) []step {
	topicKey := lockkey.Topic(r.plain, topic)
	keys := lockkey.Identifiers(r.plain, topic, identifiers)
	if len(keys) > lockkey.MaxIdentifiers {
		return []step{{sql: lockExclusive, args: []any{lockkey.InsertionSpace, topicKey}}}
	}
	return []step{
		{sql: lockShared, args: []any{lockkey.InsertionSpace, topicKey}},
		{sql: lockIdentifiers, args: []any{lockkey.IdentifierSpace, keys}},
	}
}

// insertOne appends a single task and returns its sequence, none for an
// unknown topic.
func (r *Repository) insertOne(ctx context.Context, db DB, sql *pushStatements, topic string, rows taskRows) ([]int64, error) {
	query := sql.pushOne
	if scopeOf(db) == own {
		query = sql.pushOneAlone
	}
	return storedSequences(ctx, db, 1, query, rows.row(topic, 0)...)
}

// taskRows are the columns of the tasks that a push stores, in the order of
// the push statements' parameters after the topic. A NULL not_before is an
// invalid timestamp.
type taskRows struct {
	identifiers []string
	states      []int16
	references  []string
	inputs      []string
	notBefore   []pgtype.Timestamp
	revivals    []int32
}

// pushRows returns the columns of the stored creations, with their states
// and counts of revivals (none when revivals is nil).
func pushRows(stored []taskapi.Creation, states []int16, revivals []int32) taskRows {
	rows := taskRows{
		identifiers: make([]string, len(stored)), states: states,
		references: make([]string, len(stored)), inputs: make([]string, len(stored)),
		notBefore: make([]pgtype.Timestamp, len(stored)), revivals: revivals,
	}
	if revivals == nil {
		rows.revivals = make([]int32, len(stored))
	}
	for i, c := range stored {
		rows.identifiers[i], rows.references[i], rows.inputs[i] = c.Identifier, c.Reference, c.Input
		rows.notBefore[i] = notBefore(c.NotBefore)
	}
	return rows
}

// len is the number of tasks.
func (rows taskRows) len() int { return len(rows.identifiers) }

// arrays returns the arguments of the push statements over arrays.
func (rows taskRows) arrays(topic string) []any {
	return []any{topic, rows.identifiers, rows.states, rows.references, rows.inputs, rows.notBefore, rows.revivals}
}

// row returns the arguments of the push statements of a single task, the
// task at i.
func (rows taskRows) row(topic string, i int) []any {
	return []any{topic, rows.identifiers[i], rows.states[i], rows.references[i], rows.inputs[i], rows.notBefore[i], rows.revivals[i]}
}

// notBefore returns t as the not_before of a task: in UTC, to the
// microsecond, NULL for the zero time.
func notBefore(t time.Time) pgtype.Timestamp {
	if t.IsZero() {
		return pgtype.Timestamp{}
	}
	return timestamp(t.Truncate(time.Microsecond))
}

// copier is a DB that copies rows in with COPY, as pgx's do.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// copyIn draws a sequence for every task and copies the tasks in, as a unit
// (see atomic) that locks the topic against a concurrent Destroy. It returns
// the sorted sequences, none for an unknown topic. A DB that cannot copy
// appends the tasks with one statement instead.
func (r *Repository) copyIn(ctx context.Context, db DB, sql *pushStatements, topic string, rows taskRows) ([]int64, error) {
	var sequences []int64
	err := atomic(ctx, db, func(tx DB) error {
		c, ok := tx.(copier)
		if !ok {
			var err error
			sequences, err = r.appendRows(ctx, tx, sql, topic, rows)
			return err
		}
		result, _ := tx.Query(ctx, sql.pushSequences, topic, rows.len())
		var err error
		if sequences, err = collectSequences(result, rows.len()); err != nil || len(sequences) == 0 {
			return err
		}
		slices.Sort(sequences)
		_, err = c.CopyFrom(ctx, r.table, pushColumns, copySource(topic, sequences, rows))
		return err
	})
	return sequences, err
}

// pushColumns are the columns that copyIn fills, in the order of copySource.
var pushColumns = []string{"topic", "sequence", "identifier", "state", "reference", "input", "not_before", "revivals"}

// copySource returns the rows of the stored tasks for COPY, with empty
// references and inputs, and invalid times, as NULL.
func copySource(topic string, sequences []int64, rows taskRows) pgx.CopyFromSource {
	row := make([]any, len(pushColumns))
	i := 0
	return pgx.CopyFromFunc(func() ([]any, error) {
		if i == rows.len() {
			return nil, nil
		}
		row[0], row[1], row[2], row[3] = topic, sequences[i], rows.identifiers[i], rows.states[i]
		row[4], row[5] = nullIfEmpty(rows.references[i]), nullIfEmpty(rows.inputs[i])
		row[6], row[7] = rows.notBefore[i], rows.revivals[i]
		i++
		return row, nil
	})
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// collectSequences reads a column of sequences, expecting about n rows.
func collectSequences(rows pgx.Rows, n int) ([]int64, error) {
	sequences := make([]int64, 0, n)
	var sequence int64
	_, err := pgx.ForEachRow(rows, []any{&sequence}, func() error {
		sequences = append(sequences, sequence)
		return nil
	})
	return sequences, err
}
