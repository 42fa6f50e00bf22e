package taskpg

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Push stores creations as tasks of topic, in one statement that also applies
// insertion to older tasks with the same identifiers. Unless wake-ups are
// off (see WithWakeUps), the first push of a topic in an interval also
// notifies TasksChannel with the topic, in that statement: the
// notification is delivered when the push commits, and not at all when it
// rolls back.
func (r *Repository) Push(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if err := check.Push(topic, insertion, creations); err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	if len(creations) == 0 {
		return nil, nil
	}
	tasks, err := retrying(ctx, db, func() ([]taskapi.Task, error) {
		return r.insert(ctx, db, topic, insertion, creations)
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
// returns the stored tasks in creation order. When it is the first push of
// the topic in the interval of wake-ups, it notifies the topic's channel.
func (r *Repository) insert(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	stamp := r.wake.Claim(topic)
	tasks, err := r.store(ctx, db, r.wake.statements(stamp != 0), topic, insertion, creations)
	if err != nil {
		r.wake.Forget(topic, stamp)
	}
	return tasks, err
}

// store stores valid creations, at least one, with the statements sql, as
// insert does.
func (r *Repository) store(ctx context.Context, db DB, sql *pushStatements, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	stored, created := batch.Stored(insertion, creations)
	states := ordinals(created)
	var sequences []int64
	var err error
	switch {
	case insertion != taskapi.Append:
		sequences, err = r.insertRows(ctx, db, sql, topic, insertion, stored, states)
	case len(stored) >= copyThreshold:
		sequences, err = r.copyIn(ctx, db, sql, topic, stored, states)
	case len(stored) == 1:
		sequences, err = r.insertOne(ctx, db, sql, topic, stored[0], states[0])
	default:
		sequences, err = r.appendRows(ctx, db, sql, topic, stored, states)
	}
	switch {
	case err != nil:
		return nil, err
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
func (r *Repository) appendRows(ctx context.Context, db DB, sql *pushStatements, topic string, stored []taskapi.Creation, states []int16) ([]int64, error) {
	identifiers, references, inputs := pushArrays(stored)
	rows, _ := db.Query(ctx, sql.push[taskapi.Append], topic, identifiers, states, references, inputs)
	return collectSequences(rows, len(stored))
}

// insertRows runs the push statement of an insertion mode that changes
// older tasks, after the locks of the identifiers: the two go in one round
// trip, the push planned for its arguments (it changes tasks of the topic's
// partition). It returns the sequences of the stored tasks, none for an
// unknown topic.
func (r *Repository) insertRows(ctx context.Context, db DB, sql *pushStatements, topic string, insertion taskapi.Insertion, stored []taskapi.Creation, states []int16) ([]int64, error) {
	identifiers, references, inputs := pushArrays(stored)
	sequences := make([]int64, 0, len(stored))
	var sequence int64
	var steps []step
	if scopeOf(db) == own {
		steps = append(steps, noJIT)
	}
	steps = append(steps, r.identifierLocks(topic, identifiers)...)
	steps = append(steps, step{
		sql: sql.push[insertion], args: []any{topic, identifiers, states, references, inputs},
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
func (r *Repository) insertOne(ctx context.Context, db DB, sql *pushStatements, topic string, c taskapi.Creation, state int16) ([]int64, error) {
	query := sql.pushOne
	if scopeOf(db) == own {
		query = sql.pushOneAlone
	}
	rows, _ := db.Query(ctx, query, topic, c.Identifier, state, c.Reference, c.Input)
	return collectSequences(rows, 1)
}

// pushArrays returns the identifiers, references and inputs of the stored
// creations, the array arguments of the push statements.
func pushArrays(stored []taskapi.Creation) (identifiers, references, inputs []string) {
	identifiers = make([]string, len(stored))
	references = make([]string, len(stored))
	inputs = make([]string, len(stored))
	for i, c := range stored {
		identifiers[i], references[i], inputs[i] = c.Identifier, c.Reference, c.Input
	}
	return identifiers, references, inputs
}

// copier is a DB that copies rows in with COPY, as pgx's do.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// copyIn draws a sequence for every task and copies the tasks in, as a unit
// (see atomic) that locks the topic against a concurrent Destroy. It returns
// the sorted sequences, none for an unknown topic. A DB that cannot copy
// appends the tasks with one statement instead.
func (r *Repository) copyIn(ctx context.Context, db DB, sql *pushStatements, topic string, stored []taskapi.Creation, states []int16) ([]int64, error) {
	var sequences []int64
	err := atomic(ctx, db, func(tx DB) error {
		c, ok := tx.(copier)
		if !ok {
			var err error
			sequences, err = r.appendRows(ctx, tx, sql, topic, stored, states)
			return err
		}
		rows, _ := tx.Query(ctx, sql.pushSequences, topic, len(stored))
		var err error
		if sequences, err = collectSequences(rows, len(stored)); err != nil || len(sequences) == 0 {
			return err
		}
		slices.Sort(sequences)
		_, err = c.CopyFrom(ctx, r.table, pushColumns, copySource(topic, sequences, stored, states))
		return err
	})
	return sequences, err
}

// pushColumns are the columns that copyIn fills, in the order of copySource.
var pushColumns = []string{"topic", "sequence", "identifier", "state", "reference", "input"}

// copySource returns the rows of the stored tasks for COPY, with empty
// references and inputs as NULL.
func copySource(topic string, sequences []int64, stored []taskapi.Creation, states []int16) pgx.CopyFromSource {
	row := make([]any, len(pushColumns))
	i := 0
	return pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(stored) {
			return nil, nil
		}
		c := stored[i]
		row[0], row[1], row[2], row[3], row[4], row[5] = topic, sequences[i], c.Identifier, states[i], nullIfEmpty(c.Reference), nullIfEmpty(c.Input)
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
