package taskpg

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.CompletionBounded[DB] = (*Repository)(nil)

// Revive revives up to size tasks of topic in state within span, in
// ascending sequence order.
func (r *Repository) Revive(ctx context.Context, db DB, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) ([]taskapi.Revival, error) {
	return r.ReviveCompletedBy(ctx, db, topic, how, state, span, time.Time{}, size)
}

// ReviveCompletedBy is Revive of the tasks completed at or before completedBy (a
// zero completedBy: all), for taskapi.CompletionBounded.
func (r *Repository) ReviveCompletedBy(ctx context.Context, db DB, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time, size int) ([]taskapi.Revival, error) {
	if run, err := check.Revive(topic, how, state, span, size); !run {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	query := r.q.reviveSpanRecreate
	if how == taskapi.ReviveReset {
		query = r.q.reviveSpanReset
	}
	ascending := func(tasks []revived) ([]revived, error) {
		slices.SortFunc(tasks, func(a, b revived) int { return cmp.Compare(a.Sequence, b.Sequence) })
		return tasks, nil
	}
	revivals, err := retrying(ctx, db, func() ([]taskapi.Revival, error) {
		return r.revive(ctx, db, topic, how, ascending, query, topic, int16(state), span.From, span.To, size, timeParameter(completedBy))
	})
	if err != nil {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	return revivals, nil
}

// ReviveTasks revives the given tasks, each of which must be in Expired to
// Succeeded; otherwise nothing changes.
func (r *Repository) ReviveTasks(ctx context.Context, db DB, topic string, how taskapi.Revivification, tasks ...taskapi.Task) ([]taskapi.Revival, error) {
	if run, err := check.ReviveTasks(topic, how, tasks); !run {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	position, sequences := batch.Positions(tasks)
	los, his := bounds(sequences)
	query := r.q.reviveTasksRecreate
	if how == taskapi.ReviveReset {
		query = r.q.reviveTasksReset
	}
	revivals, err := retrying(ctx, db, func() ([]taskapi.Revival, error) {
		revivals, err := r.revive(ctx, db, topic, how, givenOrder(position), query, topic, los, his, len(position))
		if errors.Is(err, errMismatch) {
			err = r.faults(ctx, db, r.q.revivableFaults, topic, sequencesOf(los, his), taskapi.ErrStateMismatch)
		}
		return revivals, err
	})
	if err != nil {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	return revivals, nil
}

// errMismatch reports that not every named task matched; the caller finds
// out which did not.
var errMismatch = errors.New("not every task matched")

// givenOrder returns an arrangement of revived tasks by their position,
// which fails with errMismatch unless every task is there.
func givenOrder(position map[int64]int) func([]revived) ([]revived, error) {
	return func(tasks []revived) ([]revived, error) {
		if len(tasks) != len(position) {
			return nil, errMismatch
		}
		slices.SortFunc(tasks, func(a, b revived) int {
			return cmp.Compare(position[a.Sequence], position[b.Sequence])
		})
		return tasks, nil
	}
}

// revived is a task that a revival statement changed, with the count of
// revivals on its row after the change.
type revived struct {
	taskapi.Task
	reference string
	revivals  int32
}

// revive runs query, which revives tasks and returns them, puts them in order
// with arrange, and pushes their successors for the modes that push, each
// with one revival more than its predecessor and due at once: all inside a
// transaction of its own, since these are two statements.
func (r *Repository) revive(ctx context.Context, db DB, topic string, how taskapi.Revivification, arrange func([]revived) ([]revived, error), query string, args ...any) ([]taskapi.Revival, error) {
	insertion, pushes := how.Insertion()
	if !pushes {
		var old []revived
		err := sealed(ctx, db, func(db DB) (err error) {
			old, err = queryRevived(ctx, db, arrange, query, args)
			return err
		})
		if len(old) > 0 {
			r.rewound(topic) // Ready again, with their sequences
		}
		return pairs(old, nil), err
	}
	var revivals []taskapi.Revival
	err := atomic(ctx, db, func(tx DB) error {
		old, err := queryRevived(ctx, tx, arrange, query, args)
		if err != nil || len(old) == 0 {
			return err
		}
		creations, counts := make([]taskapi.Creation, len(old)), make([]int32, len(old))
		for i, t := range old {
			creations[i] = taskapi.Creation{Identifier: t.Identifier, Input: t.Input, Reference: t.reference}
			counts[i] = t.revivals + 1
		}
		current, err := r.insert(ctx, tx, topic, insertion, creations, counts)
		if err == nil {
			revivals = pairs(old, current)
		}
		return err
	})
	return revivals, err
}

func queryRevived(ctx context.Context, db DB, arrange func([]revived) ([]revived, error), sql string, args []any) ([]revived, error) {
	rows, _ := query(ctx, db, sql, args...)
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (revived, error) {
		var t revived
		err := row.Scan(&t.Sequence, &t.Identifier, &t.Input, &t.reference, &t.revivals)
		return t, err
	})
	if err != nil {
		return nil, err
	}
	return arrange(tasks)
}

// pairs pairs old tasks with the tasks that carry on, or with themselves when
// current is nil.
func pairs(old []revived, current []taskapi.Task) []taskapi.Revival {
	if len(old) == 0 {
		return nil
	}
	revivals := make([]taskapi.Revival, len(old))
	for i, t := range old {
		revivals[i] = taskapi.Revival{Previous: t.Task, Current: t.Task}
		if current != nil {
			revivals[i].Current = current[i]
		}
	}
	return revivals
}

// Reassign sets each task to the state of its result, and its output to
// the assignment's when that is not empty, in one statement that writes
// only when every task is in Expired to Succeeded.
func (r *Repository) Reassign(ctx context.Context, db DB, topic string, assignments ...taskapi.Assignment) error {
	if run, err := check.Assignments(topic, assignments); !run {
		return wrapf(err, "reassign tasks of %q", topic)
	}
	runs, named := batch.Assignments(assignments)
	los, his, states, outputs := make([]int64, len(runs)), make([]int64, len(runs)), make([]int16, len(runs)), make([]string, len(runs))
	for i, run := range runs {
		los[i], his[i] = run.Range.From, run.Range.To
		states[i], outputs[i] = int16(run.Key.Result.State()), run.Key.Output
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		return struct{}{}, sealed(ctx, db, func(db DB) error {
			var matched int
			rows, _ := query(ctx, db, r.q.reassign, topic, los, his, states, named, outputs)
			_, err := pgx.ForEachRow(rows, []any{&matched}, func() error { return nil })
			if err == nil && matched != named {
				err = r.faults(ctx, db, r.q.revivableFaults, topic, sequencesOf(los, his), taskapi.ErrStateMismatch)
			}
			return err
		})
	})
	if err != nil {
		return wrapf(err, "reassign tasks of %q", topic)
	}
	return nil
}

// ReassignAll moves every task of topic in state from within span to the
// state of result to, and returns how many.
func (r *Repository) ReassignAll(ctx context.Context, db DB, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range) (int64, error) {
	return r.ReassignCompletedBy(ctx, db, topic, from, to, span, time.Time{})
}

// ReassignCompletedBy is ReassignAll of the tasks completed at or before
// completedBy (a zero completedBy: all), for taskapi.CompletionBounded.
func (r *Repository) ReassignCompletedBy(ctx context.Context, db DB, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range, completedBy time.Time) (int64, error) {
	if run, err := check.ReassignAll(topic, from, to, span); !run {
		return 0, wrapf(err, "reassign tasks of %q", topic)
	}
	tag, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		return exec(ctx, db, r.q.reassignAll, topic, int16(from), span.From, span.To, int16(to.State()), timeParameter(completedBy))
	})
	if err != nil {
		return 0, wrapf(err, "reassign tasks of %q", topic)
	}
	return tag.RowsAffected(), nil
}

// bounds returns the runs of consecutive sequences as arrays of their
// bounds, for the statements that name tasks by ranges.
func bounds(sequences []int64) (los, his []int64) {
	ranges := seqrange.Ranges(sequences)
	los, his = make([]int64, len(ranges)), make([]int64, len(ranges))
	for i, rg := range ranges {
		los[i], his[i] = rg.From, rg.To
	}
	return los, his
}
