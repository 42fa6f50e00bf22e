package taskpg

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Push stores creations as tasks of topic, in one statement that also applies
// insertion to older tasks with the same identifiers.
func (r *Repository) Push(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if err := check.Push(topic, insertion, creations); err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	if len(creations) == 0 {
		return nil, nil
	}
	tasks, err := r.insert(ctx, db, topic, insertion, creations)
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
// returns the stored tasks in creation order.
func (r *Repository) insert(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	stored, created := batch.Stored(insertion, creations)
	states := ordinals(created)
	var sequences []int64
	var err error
	switch {
	case insertion == taskapi.Append && len(stored) >= copyThreshold:
		sequences, err = r.copyIn(ctx, db, topic, stored, states)
	case insertion == taskapi.Append && len(stored) == 1:
		sequences, err = r.insertOne(ctx, db, topic, stored[0], states[0])
	default:
		sequences, err = r.insertRows(ctx, db, topic, insertion, stored, states)
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

// insertRows runs the push statement of insertion and returns the sequences
// of the stored tasks, none for an unknown topic.
func (r *Repository) insertRows(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, stored []taskapi.Creation, states []int16) ([]int64, error) {
	identifiers, references, inputs := pushArrays(stored)
	rows, _ := db.Query(ctx, r.q.push[insertion], topic, identifiers, states, references, inputs)
	return collectSequences(rows, len(stored))
}

// insertOne appends a single task and returns its sequence, none for an
// unknown topic.
func (r *Repository) insertOne(ctx context.Context, db DB, topic string, c taskapi.Creation, state int16) ([]int64, error) {
	query := r.q.pushOne
	if alone(db) {
		query = r.q.pushOneAlone
	}
	rows, _ := db.Query(ctx, query, topic, c.Identifier, state, c.Reference, c.Input)
	return collectSequences(rows, 1)
}

// alone reports whether a statement run on db is a transaction of its own,
// so that its failure aborts nothing of the caller's: db is a pool, or a
// connection outside a transaction.
func alone(db DB) bool {
	switch db := db.(type) {
	case *pgxpool.Pool:
		return true
	case *pgx.Conn:
		return db.PgConn().TxStatus() == 'I'
	}
	return false
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

// copyIn draws a sequence for every task and copies the tasks in, in a
// transaction of its own that locks the topic against a concurrent Destroy.
// It returns the sorted sequences, none for an unknown topic.
func (r *Repository) copyIn(ctx context.Context, db DB, topic string, stored []taskapi.Creation, states []int16) ([]int64, error) {
	var sequences []int64
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, r.q.pushSequences, topic, len(stored))
		var err error
		if sequences, err = collectSequences(rows, len(stored)); err != nil || len(sequences) == 0 {
			return err
		}
		slices.Sort(sequences)
		_, err = tx.CopyFrom(ctx, r.table, pushColumns, copySource(topic, sequences, stored, states))
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
