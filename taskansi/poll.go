package taskansi

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Poll marks up to size Ready tasks of topic that are due (no NotBefore
// after the database's now) Active with this owner and returns them in poll
// order: it locks the candidates, skipping rows that others locked, and
// marks them, in a transaction of its own. The candidates come from the
// tasks never deferred, in sequence order, and the due deferred ones, in the
// order of their times, so that the tasks that wait for their time cost
// nothing (see pollCandidates). A conditional poll first takes the
// dialect's lock on the topic (see the package documentation). A poll of a
// topic with limits (taskapi.Regulator) takes no more than they leave room
// for and under a limit per identifier picks its candidates by identifier
// (see pollLimited). A poll under a term first makes sure of the term (see
// pollTerm).
func (r *Repository) Poll(ctx context.Context, db DB, topic string, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
	p, run, err := check.Poll(r.owner, topic, size, opts)
	if !run {
		return nil, wrapf(err, "poll %q", topic)
	}
	var tasks []taskapi.Task
	err = r.retrying(ctx, db, func(db DB) error {
		points, caller := r.pointLocks(db), inside(db)
		err := r.atomic(ctx, db, func(tx DB) (err error) {
			tasks, err = r.poll(ctx, tx, topic, size, p, points, caller)
			return err
		})
		if err == nil && len(tasks) == 0 {
			err = r.mustExist(ctx, db)
		}
		return err
	})
	if err != nil {
		return nil, wrapf(err, "poll %q", topic)
	}
	slices.SortFunc(tasks, func(a, b taskapi.Task) int {
		if p.Order == taskapi.LIFO {
			a, b = b, a
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	return tasks, nil
}

// PollOne polls a single task of topic and reports false when none was
// ready: taskapi.PollOne, which Go cannot instantiate from a *sql.DB.
func (r *Repository) PollOne(ctx context.Context, db DB, topic string, opts ...taskapi.PollOption) (taskapi.Task, bool, error) {
	return taskapi.PollOne[DB](ctx, r, db, topic, opts...)
}

// poll polls in tx, the caller's transaction where caller is set. It reads
// the topic's limits first; a conditional poll, and on MySQL a poll of a
// topic with limits, takes the dialect's lock on the topic, so that the
// polls that count (conditions, limits) take turns. On SQLite the write
// lock serializes every poll, and on PostgreSQL the trigger of a limited
// topic's partition takes its own lock (migration 00011). A poll under
// limits runs its statements with the planner's settings of
// plannedLimits.
func (r *Repository) poll(ctx context.Context, tx DB, topic string, size int, p check.Polling, points, caller bool) ([]taskapi.Task, error) {
	if p.Term != nil {
		if current, err := r.underTerm(ctx, tx, *p.Term); err != nil || !current {
			return nil, err
		}
	}
	limits, err := r.topicLimits(ctx, tx, topic)
	if err != nil {
		return nil, err
	}
	limited := limits != taskapi.Limits{}
	if limited {
		r.limited.Store(topic, struct{}{})
	} else {
		r.limited.Delete(topic)
	}
	var blocking []any
	if states := p.Blocking(); states != nil {
		blocking = appendArgs(nil, ordinals(states)...)
	}
	if blocking != nil || (limited && r.dialect.locks == lockRows) {
		if err := r.lockPolls(ctx, tx, topic); err != nil {
			return nil, err
		}
	}
	if !limited {
		return r.take(ctx, tx, topic, func() ([]taskapi.Task, error) {
			return r.pollPlain(ctx, tx, topic, size, p.Order, blocking, points)
		})
	}
	restore, err := r.plannedLimits(ctx, tx, caller)
	if err == nil {
		limits, err = r.countedLimits(ctx, tx, topic, limits)
	}
	if err != nil {
		return nil, err
	}
	tasks, err := r.take(ctx, tx, topic, func() ([]taskapi.Task, error) {
		return r.pollLimited(ctx, tx, topic, size, p, blocking, limits, points)
	})
	if err != nil {
		return nil, err
	}
	return tasks, restore()
}

// take marks the candidates that locked returns (see mark).
func (r *Repository) take(ctx context.Context, tx DB, topic string, locked func() ([]taskapi.Task, error)) ([]taskapi.Task, error) {
	tasks, err := locked()
	if err != nil || len(tasks) == 0 {
		return nil, err
	}
	return r.mark(ctx, tx, topic, tasks)
}

// pollPlain locks up to size candidates of the topic, the first of
// both branches in poll order (see pollCandidates), or where points by
// points (see pollPoints); blocking holds the states that block a
// conditional poll, none for an unconditional one.
func (r *Repository) pollPlain(ctx context.Context, tx DB, topic string, size int, order taskapi.Order, blocking []any, points bool) ([]taskapi.Task, error) {
	conditional := min(len(blocking), 1)
	if points {
		return r.pollPoints(ctx, tx, topic, size, order, conditional, blocking)
	}
	query := r.expand(r.q.poll[order][conditional], "{list}", marks(len(blocking)))
	return queryTasks(ctx, tx, query, r.pollArgs(topic, nil, blocking, size)...)
}

// mark marks the locked candidates Active with this owner and returns those
// it marked. On PostgreSQL the trigger of a limited topic's partition may
// leave some Ready (see pollMarked); a poll that took tasks there records
// that its owner holds tasks in the topic.
func (r *Repository) mark(ctx context.Context, tx DB, topic string, tasks []taskapi.Task) ([]taskapi.Task, error) {
	sequences := make([]int64, len(tasks))
	for i, t := range tasks {
		sequences[i] = t.Sequence
	}
	args := appendArgs([]any{r.owner, topic}, sequences...)
	if !r.dialect.partitioned {
		_, err := tx.ExecContext(ctx, r.expand(r.q.pollMark, "{list}", marks(len(sequences))), args...)
		return tasks, err
	}
	marked, err := querySequences(ctx, tx, r.expand(r.q.pollMarked, "{list}", marks(len(sequences))), args...)
	if err != nil {
		return nil, err
	}
	kept := make(map[int64]bool, len(marked))
	for _, s := range marked {
		kept[s] = true
	}
	tasks = slices.DeleteFunc(tasks, func(t taskapi.Task) bool { return !kept[t.Sequence] })
	if len(tasks) == 0 {
		return nil, nil
	}
	_, err = tx.ExecContext(ctx, r.expand(r.q.pollHold), r.owner, topic)
	return tasks, err
}

// pollPoints finds candidates without locking them and then locks them by
// points (see pointLocks), window after window until it has size tasks or no
// candidate is left: candidates that others locked, took or deferred
// meanwhile are skipped.
func (r *Repository) pollPoints(ctx context.Context, tx DB, topic string, size int, order taskapi.Order, conditional int, blocking []any) ([]taskapi.Task, error) {
	read := r.expand(r.q.pollRead[order][conditional], "{list}", marks(len(blocking)))
	cursor := int64(taskapi.Inception)
	if order == taskapi.LIFO {
		cursor = taskapi.MaxSequence
	}
	var tasks []taskapi.Task
	for len(tasks) < size {
		want := size - len(tasks)
		candidates, err := querySequences(ctx, tx, read, r.pollArgs(topic, []any{cursor}, blocking, want)...)
		if err != nil || len(candidates) == 0 {
			return tasks, err
		}
		query := r.expand(r.q.pollPoints[order], "{list}", marks(len(candidates)))
		locked, err := queryTasks(ctx, tx, query, r.args(append(appendArgs([]any{topic}, candidates...), now{})...)...)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, locked...)
		if len(candidates) < want {
			return tasks, nil
		}
		cursor = candidates[len(candidates)-1]
	}
	return tasks, nil
}

// pollArgs returns the arguments of a poll's candidates (see
// pollCandidates): those of either branch, of which the due one reads now,
// each with the cursor where pollRead has one, and the limit of the union.
func (r *Repository) pollArgs(topic string, cursor, blocking []any, size int) []any {
	branch := func(due ...any) []any {
		return slices.Concat([]any{topic}, due, cursor, []any{r.owner}, blocking, []any{size})
	}
	return r.args(slices.Concat(branch(), branch(now{}), []any{size})...)
}

// mustExist returns ErrUnknownOwner unless this owner is registered.
func (r *Repository) mustExist(ctx context.Context, db DB) error {
	var n int64
	if err := db.QueryRowContext(ctx, r.expand(r.q.ownerExists), r.owner).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("owner %q is not registered: %w", check.Short(r.owner), taskapi.ErrUnknownOwner)
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
// owner; otherwise the error, a *taskapi.StateError, names the tasks that
// are not.
func (r *Repository) Complete(ctx context.Context, db DB, topic string, completions ...taskapi.Completion) error {
	if run, err := check.Completions(topic, completions); !run {
		return wrapf(err, "complete tasks of %q", topic)
	}
	runs, _ := batch.Decisions(completions)
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			if err := r.lockNamed(ctx, tx, r.q.completeLock, topic, []any{topic, r.owner}, rangesOf(runs), taskapi.ErrNotActive); err != nil {
				return err
			}
			for decision, ranges := range byKey(runs) {
				args := r.args(int(decision.Result.State()), nullable(decision.Output), now{}, topic)
				if err := r.execRanges(ctx, tx, r.q.completeSet, args, ranges); err != nil {
					return err
				}
			}
			return r.freed(ctx, tx, topic)
		})
	})
	if err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	return nil
}

// lockNamed runs query, which locks the rows of the given ranges that match
// and takes args followed by the {ranges}, and fails with a
// *taskapi.StateError of sentinel, naming the tasks it did not lock, unless
// it locked every task of ranges.
func (r *Repository) lockNamed(ctx context.Context, tx DB, query, topic string, args []any, ranges []taskapi.Range, sentinel error) error {
	locked, err := r.queryRanges(ctx, tx, query, args, ranges)
	if err != nil {
		return err
	}
	return stateError(topic, ranges, locked, sentinel)
}

// stateError returns nil when locked holds every sequence of ranges, and
// otherwise a *taskapi.StateError of sentinel that names the others.
func stateError(topic string, ranges []taskapi.Range, locked []int64, sentinel error) error {
	found := make(map[int64]bool, len(locked))
	for _, s := range locked {
		found[s] = true
	}
	var faults []int64
	for _, rg := range ranges {
		for s := rg.From; s <= rg.To; s++ {
			if !found[s] {
				faults = append(faults, s)
			}
		}
	}
	if len(faults) == 0 {
		return nil
	}
	slices.Sort(faults)
	return &taskapi.StateError{Topic: topic, Sequences: faults, Err: sentinel}
}

// queryRanges runs query, which returns sequences and takes args followed by
// the {ranges}, in pieces, and returns the sequences.
func (r *Repository) queryRanges(ctx context.Context, tx DB, query string, args []any, ranges []taskapi.Range) ([]int64, error) {
	var sequences []int64
	err := r.splitRanges(ranges, func(marks string, bounds []any) error {
		seqs, err := querySequences(ctx, tx, r.expand(query, "{ranges}", marks), append(slices.Clip(args), bounds...)...)
		sequences = append(sequences, seqs...)
		return err
	})
	return sequences, err
}

// execRanges runs query, which takes args followed by the {ranges}, in pieces.
func (r *Repository) execRanges(ctx context.Context, tx DB, query string, args []any, ranges []taskapi.Range) error {
	return r.splitRanges(ranges, func(marks string, bounds []any) error {
		_, err := tx.ExecContext(ctx, r.expand(query, "{ranges}", marks), append(slices.Clip(args), bounds...)...)
		return err
	})
}

// splitRanges calls fn with the {ranges} condition and its arguments for
// pieces of ranges: each range as BETWEEN its bounds, or on a dialect that
// locks by points (MySQL) each sequence in an IN list, so that InnoDB locks
// the named rows and no gap.
func (r *Repository) splitRanges(ranges []taskapi.Range, fn func(marks string, bounds []any) error) error {
	if !r.dialect.points {
		return batch.Split(ranges, chunk, func(piece []taskapi.Range) error {
			bounds := make([]any, 0, 2*len(piece))
			for _, rg := range piece {
				bounds = append(bounds, rg.From, rg.To)
			}
			return fn(strings.TrimSuffix(strings.Repeat("sequence BETWEEN ? AND ? OR ", len(piece)), " OR "), bounds)
		})
	}
	var sequences []int64
	for _, rg := range ranges {
		for s := rg.From; s <= rg.To; s++ {
			sequences = append(sequences, s)
		}
	}
	return batch.Split(sequences, chunk, func(piece []int64) error {
		return fn("sequence IN ("+marks(len(piece))+")", appendArgs(nil, piece...))
	})
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
