package taskansi

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.CompletionBounded[DB] = (*Repository)(nil)

// Revive revives up to size tasks of topic in state within span, in
// ascending sequence order, skipping rows that others locked.
func (r *Repository) Revive(ctx context.Context, db DB, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) ([]taskapi.Revival, error) {
	return r.ReviveCompletedBy(ctx, db, topic, how, state, span, time.Time{}, size)
}

// ReviveCompletedBy is Revive of the tasks completed at or before completedBy (a
// zero completedBy: all), for taskapi.CompletionBounded.
func (r *Repository) ReviveCompletedBy(ctx context.Context, db DB, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time, size int) ([]taskapi.Revival, error) {
	if run, err := check.Revive(topic, how, state, span, size); !run {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	var revivals []taskapi.Revival
	err := r.retrying(ctx, db, func(db DB) error {
		points := r.pointLocks(db)
		return r.atomic(ctx, db, func(tx DB) error {
			old, err := queryRevived(ctx, tx, r.expand(r.q.reviveSpan), topic, int(state), span.From, span.To, completedByParameter(completedBy), size)
			if err == nil {
				slices.SortFunc(old, func(a, b revived) int { return cmp.Compare(a.Sequence, b.Sequence) })
				revivals, err = r.revive(ctx, tx, topic, how, old, points)
			}
			return err
		})
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
	ranges := seqrange.Ranges(sequences)
	var revivals []taskapi.Revival
	err := r.retrying(ctx, db, func(db DB) error {
		points := r.pointLocks(db)
		return r.atomic(ctx, db, func(tx DB) error {
			var old []revived
			err := r.splitRanges(ranges, func(marks string, bounds []any) error {
				found, err := queryRevived(ctx, tx, r.expand(r.q.reviveLock, "{ranges}", marks), append([]any{topic}, bounds...)...)
				old = append(old, found...)
				return err
			})
			if err == nil && len(old) != len(position) {
				locked := make([]int64, len(old))
				for i, t := range old {
					locked[i] = t.Sequence
				}
				err = stateError(topic, ranges, locked, taskapi.ErrStateMismatch)
			}
			if err != nil {
				return err
			}
			slices.SortFunc(old, func(a, b revived) int { return cmp.Compare(position[a.Sequence], position[b.Sequence]) })
			revivals, err = r.revive(ctx, tx, topic, how, old, points)
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "revive tasks of %q", topic)
	}
	return revivals, nil
}

// revived is a task that a revival locked.
type revived struct {
	taskapi.Task
	reference string
	revivals  int // revivals of the task so far
}

// revive changes the locked tasks old, in the order of the revivals, and
// pushes their successors for the modes that push. A reset counts the
// revival on the row; a successor carries the count plus one and, like a
// reset task, no not-before time.
func (r *Repository) revive(ctx context.Context, tx DB, topic string, how taskapi.Revivification, old []revived, points bool) ([]taskapi.Revival, error) {
	if len(old) == 0 {
		return nil, nil
	}
	sequences := make([]int64, len(old))
	for i, t := range old {
		sequences[i] = t.Sequence
	}
	insertion, pushes := how.Insertion()
	change := r.q.revivalReset
	if pushes {
		change = r.q.revivalRecreate
	}
	if err := r.execRanges(ctx, tx, change, []any{topic}, seqrange.Ranges(sequences)); err != nil {
		return nil, err
	}
	revivals := make([]taskapi.Revival, len(old))
	for i, t := range old {
		revivals[i] = taskapi.Revival{Previous: t.Task, Current: t.Task}
	}
	if !pushes {
		return revivals, nil
	}
	creations := make([]taskapi.Creation, len(old))
	counts := make([]int, len(old))
	for i, t := range old {
		creations[i] = taskapi.Creation{Identifier: t.Identifier, Input: t.Input, Reference: t.reference}
		counts[i] = t.revivals + 1
	}
	current, err := r.insert(ctx, tx, topic, insertion, creations, counts, points)
	if err != nil {
		return nil, err
	}
	for i := range revivals {
		revivals[i].Current = current[i]
	}
	return revivals, nil
}

func queryRevived(ctx context.Context, db DB, query string, args ...any) ([]revived, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tasks []revived
	for rows.Next() {
		var t revived
		if err := rows.Scan(&t.Sequence, &t.Identifier, &t.Input, &t.reference, &t.revivals); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// Reassign sets each task to the state of its result, and its output to
// the assignment's when that is not empty, in a transaction of its own that
// locks the named tasks and writes only when every one is in Expired to
// Succeeded.
func (r *Repository) Reassign(ctx context.Context, db DB, topic string, assignments ...taskapi.Assignment) error {
	if run, err := check.Assignments(topic, assignments); !run {
		return wrapf(err, "reassign tasks of %q", topic)
	}
	runs, _ := batch.Assignments(assignments)
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			if err := r.lockNamed(ctx, tx, r.q.reassignLock, topic, []any{topic}, rangesOf(runs), taskapi.ErrStateMismatch); err != nil {
				return err
			}
			for assigned, ranges := range byKey(runs) {
				if err := r.reassign(ctx, tx, topic, assigned, ranges); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return wrapf(err, "reassign tasks of %q", topic)
	}
	return nil
}

// reassign gives the locked tasks of ranges the state of assigned's result
// and, when it is not empty, its output.
func (r *Repository) reassign(ctx context.Context, tx DB, topic string, assigned taskapi.Decision, ranges []taskapi.Range) error {
	state := int(assigned.Result.State())
	if err := r.execRanges(ctx, tx, r.q.reassignSet, r.args(state, now{}, topic, state), ranges); err != nil {
		return err
	}
	if assigned.Output == "" {
		return nil
	}
	return r.execRanges(ctx, tx, r.q.reassignOutput, []any{assigned.Output, topic}, ranges)
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
	n, err := r.written(ctx, db, r.expand(r.q.reassignAll), r.args(int(to.State()), now{}, topic, int(from), span.From, span.To, completedByParameter(completedBy))...)
	if err != nil {
		return 0, wrapf(err, "reassign tasks of %q", topic)
	}
	return n, nil
}
