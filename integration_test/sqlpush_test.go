package integration_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/capacity"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// sqlPusher is taskpg's repository but for Push, which goes through the
// SQL function task_push_many of migration 00018, as a producer in another
// language calls it: the conformance suite's push cases then hold the
// function to taskpg's Push.
type sqlPusher struct {
	*taskpg.Repository
}

// Push calls task_push_many with the creations' columns, and maps its
// SQLSTATEs to the sentinels taskpg's Push returns.
func (r sqlPusher) Push(ctx context.Context, db taskpg.DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	tx, ok := db.(pgx.Tx)
	if !ok {
		return r.push(ctx, db, topic, insertion, creations)
	}
	// In a caller's transaction, in a savepoint, as docs/languages.md
	// tells: a refused push then leaves the transaction usable.
	savepoint, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	tasks, err := r.push(ctx, savepoint, topic, insertion, creations)
	if err != nil {
		_ = savepoint.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tasks, savepoint.Commit(ctx)
}

// push calls task_push_many on db.
func (r sqlPusher) push(ctx context.Context, db taskpg.DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	n := len(creations)
	identifiers, inputs, references := make([]string, n), make([]string, n), make([]string, n)
	notBefore, suspended := make([]*time.Time, n), make([]bool, n)
	for i, c := range creations {
		identifiers[i], inputs[i], references[i], suspended[i] = c.Identifier, c.Input, c.Reference, c.Suspended
		if !c.NotBefore.IsZero() {
			notBefore[i] = &creations[i].NotBefore
		}
	}
	// The tests' connections have an empty search_path: the name is
	// qualified, as a caller's must be when its path lacks the schema.
	rows, _ := db.Query(ctx, `SELECT public.task_push_many($1, $2, $3, $4, $5, $6, $7)`,
		topic, identifiers, inputs, references, insertion.String(), notBefore, suspended)
	var sequences []int64
	for rows.Next() {
		var sequence int64
		if err := rows.Scan(&sequence); err != nil {
			rows.Close()
			return nil, err
		}
		sequences = append(sequences, sequence)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("task_push_many(%q): %w", topic, sqlPushError(err, topic))
	}
	stored, _ := batch.Stored(insertion, creations)
	if len(stored) != len(sequences) {
		return nil, fmt.Errorf("task_push_many(%q) returned %d sequences for %d stored tasks", topic, len(sequences), len(stored))
	}
	tasks := make([]taskapi.Task, len(stored))
	for i, c := range stored {
		tasks[i] = taskapi.Task{Sequence: sequences[i], Identifier: c.Identifier, Input: c.Input}
	}
	return tasks, nil
}

// sqlPushError maps the SQLSTATEs of task_push_many as docs/languages.md
// tells a caller to read them.
func sqlPushError(err error, topic string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	if refused, ok := capacity.Refused(pgErr.Code, pgErr.Detail, topic); ok {
		return refused
	}
	switch pgErr.Code {
	case "22023", "22021": // refused by the function; a NUL or invalid UTF-8 refused by the server
		return fmt.Errorf("%w: %w", taskapi.ErrInvalidArgument, err)
	case "42704":
		return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
	}
	return err
}
