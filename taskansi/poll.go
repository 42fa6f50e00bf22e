package taskansi

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Poll marks up to size Ready tasks of topic Active with this owner and
// returns them in poll order: it locks the candidates, skipping rows that
// others locked, and marks them, in a transaction of its own. A conditional
// poll first takes the dialect's lock on the topic (see the package
// documentation).
func (r *Repository) Poll(ctx context.Context, db DB, topic string, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
	order, condition, err := check.Poll(topic, opts)
	if err != nil {
		return nil, wrapf(err, "poll %q", topic)
	}
	if size < 1 {
		return nil, nil
	}
	var tasks []taskapi.Task
	err = r.atomic(ctx, db, func(tx DB) (err error) {
		tasks, err = r.poll(ctx, tx, topic, size, order, condition)
		return err
	})
	if err == nil && len(tasks) == 0 {
		err = r.mustExist(ctx, db)
	}
	if err != nil {
		return nil, wrapf(err, "poll %q", topic)
	}
	slices.SortFunc(tasks, func(a, b taskapi.Task) int {
		if order == taskapi.LIFO {
			a, b = b, a
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	return tasks, nil
}

func (r *Repository) poll(ctx context.Context, tx DB, topic string, size int, order taskapi.Order, condition taskapi.Condition) ([]taskapi.Task, error) {
	query := r.expand(r.q.poll[order][0])
	args := []any{topic, r.owner}
	if condition != taskapi.Unconditional {
		if err := r.lockPolls(ctx, tx, topic); err != nil {
			return nil, err
		}
		blocking := append([]taskapi.State{taskapi.Active}, condition.Blocking()...)
		query = r.expand(r.q.poll[order][1], "{list}", marks(len(blocking)))
		args = appendArgs(args, ordinals(blocking)...)
	}
	tasks, err := queryTasks(ctx, tx, query, append(args, size)...)
	if err != nil || len(tasks) == 0 {
		return nil, err
	}
	sequences := make([]int64, len(tasks))
	for i, t := range tasks {
		sequences[i] = t.Sequence
	}
	_, err = tx.ExecContext(ctx, r.expand(r.q.pollMark, "{list}", marks(len(sequences))),
		appendArgs([]any{r.owner, topic}, sequences...)...)
	return tasks, err
}

// lockPolls serializes the conditional polls of topic until tx ends, where
// the dialect needs it.
func (r *Repository) lockPolls(ctx context.Context, tx DB, topic string) error {
	if r.q.pollLock == "" {
		return nil
	}
	rows, err := tx.QueryContext(ctx, r.expand(r.q.pollLock), r.dialect.pollKey(r.schema, topic))
	if err != nil {
		return err
	}
	return rows.Close()
}

// mustExist returns ErrUnknownOwner unless this owner is registered.
func (r *Repository) mustExist(ctx context.Context, db DB) error {
	var n int64
	if err := db.QueryRowContext(ctx, r.expand(r.q.ownerExists), r.owner).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("owner %q: %w", r.owner, taskapi.ErrUnknownOwner)
	}
	return nil
}

// queryTasks runs a query that returns sequence, identifier and input.
func queryTasks(ctx context.Context, db DB, query string, args ...any) ([]taskapi.Task, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tasks []taskapi.Task
	for rows.Next() {
		var t taskapi.Task
		if err := rows.Scan(&t.Sequence, &t.Identifier, &t.Input); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// Complete records the decisions, in a transaction of its own that locks the
// named tasks and writes only when every one is Active and owned by this
// owner.
func (r *Repository) Complete(ctx context.Context, db DB, topic string, completions ...taskapi.Completion) error {
	if err := check.Completions(topic, completions); err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	if len(completions) == 0 {
		return nil
	}
	runs, n := batch.Decisions(completions)
	err := r.atomic(ctx, db, func(tx DB) error {
		matched, err := r.countLocked(ctx, tx, r.q.completeLock, []any{topic, r.owner}, rangesOf(runs))
		if err == nil && matched != n {
			err = fmt.Errorf("%d tasks, not all Active and owned by %q: %w", n, r.owner, taskapi.ErrNotActive)
		}
		if err != nil {
			return err
		}
		for decision, ranges := range byKey(runs) {
			args := []any{int(decision.Result.State()), nullable(decision.Output), topic}
			if err := r.execRanges(ctx, tx, r.q.completeSet, args, ranges); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	return nil
}

// countLocked runs query, which locks the rows of the given ranges that match
// and takes args followed by the {ranges}, in pieces, and returns how many
// rows it locked.
func (r *Repository) countLocked(ctx context.Context, tx DB, query string, args []any, ranges []taskapi.Range) (int, error) {
	matched := 0
	err := batch.Split(ranges, chunk, func(piece []taskapi.Range) error {
		sequences, err := querySequences(ctx, tx, r.expand(query, "{ranges}", rangeMarks(len(piece))), rangeArgs(args, piece)...)
		matched += len(sequences)
		return err
	})
	return matched, err
}

// execRanges runs query, which takes args followed by the {ranges}, in pieces.
func (r *Repository) execRanges(ctx context.Context, tx DB, query string, args []any, ranges []taskapi.Range) error {
	return batch.Split(ranges, chunk, func(piece []taskapi.Range) error {
		_, err := tx.ExecContext(ctx, r.expand(query, "{ranges}", rangeMarks(len(piece))), rangeArgs(args, piece)...)
		return err
	})
}

// rangeArgs returns args followed by the bounds of ranges.
func rangeArgs(args []any, ranges []taskapi.Range) []any {
	all := slices.Clip(args)
	for _, rg := range ranges {
		all = append(all, rg.From, rg.To)
	}
	return all
}

// rangesOf returns the ranges of runs.
func rangesOf[K comparable](runs []seqrange.Run[K]) []taskapi.Range {
	ranges := make([]taskapi.Range, len(runs))
	for i, run := range runs {
		ranges[i] = run.Range
	}
	return ranges
}

// byKey groups the ranges of runs by their key, so that one statement writes
// every task with the same key.
func byKey[K comparable](runs []seqrange.Run[K]) map[K][]taskapi.Range {
	groups := map[K][]taskapi.Range{}
	for _, run := range runs {
		groups[run.Key] = append(groups[run.Key], run.Range)
	}
	return groups
}

// ordinals returns the stored ordinals of states.
func ordinals(states []taskapi.State) []int {
	ords := make([]int, len(states))
	for i, s := range states {
		ords[i] = int(s)
	}
	return ords
}
