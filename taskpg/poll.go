package taskpg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/planner"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Poll marks up to size Ready tasks of topic that are due (no NotBefore
// after the database's clock) Active with this owner, in one statement, and
// returns them in poll order. A conditional poll first takes the topic's
// advisory lock, in the same round trip (see the package documentation). A
// poll under a term claims only while the term is current, in the same
// statement (see pollTerm).
func (r *Repository) Poll(ctx context.Context, db DB, topic string, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
	p, run, err := check.Poll(r.owner, topic, size, opts)
	if !run {
		return nil, wrapf(err, "poll %q", topic)
	}
	tasks, err := retrying(ctx, db, func() ([]taskapi.Task, error) {
		return r.pollLimited(ctx, db, topic, size, p)
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
// ready: taskapi.PollOne, which Go cannot instantiate from a pool.
func (r *Repository) PollOne(ctx context.Context, db DB, topic string, opts ...taskapi.PollOption) (taskapi.Task, bool, error) {
	return taskapi.PollOne[DB](ctx, r, db, topic, opts...)
}

// pollLimited polls with the statement that the topic's limits call for
// (see pollMode), as the repository last found them. When a poll finds them
// other than it thought, it polls again, with the statement they call for,
// for the tasks it has yet to take: a plain poll that met limits polls as
// limited, and that poll may find a limit per identifier (a third poll,
// keyed). The repository remembers what it found.
func (r *Repository) pollLimited(ctx context.Context, db DB, topic string, size int, p check.Polling) ([]taskapi.Task, error) {
	mode := plainPoll
	if m, ok := r.limited.Load(topic); ok {
		mode = m.(pollMode)
	}
	var tasks []taskapi.Task
	for range 3 {
		more, found, err := r.poll(ctx, db, topic, size-len(tasks), p, mode)
		if err != nil {
			if len(tasks) > 0 && scopeOf(db) != inside {
				// The polls before have committed their tasks, which are
				// the caller's now; this one changed nothing.
				return tasks, nil
			}
			return nil, err
		}
		tasks = append(tasks, more...)
		if found == mode {
			break
		}
		if found == plainPoll {
			r.limited.Delete(topic)
		} else {
			r.limited.Store(topic, found)
		}
		if len(tasks) == size {
			break
		}
		mode = found
	}
	return tasks, nil
}

// Rows of these sequences, which no task has, are not tasks: the first says
// that the owner is not registered, the others what limits the topic has
// (see plainMarker and limitedMarker).
const (
	markUnknownOwner = taskapi.Inception
	markLimited      = -1  // some limit; a limited poll finds out which
	markFloor        = -3  // what moves the floor (floorMarker)
	markModes        = -10 // minus 1 for an Active limit, 2 for one per identifier, 4 when they held the poll back
)

// modeOf returns the mode of the marker row of sequence s, whether the
// topic's limits held the poll back, and whether s is a marker.
func modeOf(s int64) (mode pollMode, held, ok bool) {
	if s == markLimited {
		return limitedPoll, false, true
	}
	bits := markModes - s
	switch {
	case bits < 0 || bits > 7:
		return plainPoll, false, false
	case bits&2 != 0:
		mode = keyedPoll
	case bits&1 != 0:
		mode = limitedPoll
	}
	return mode, bits&4 != 0, true
}

// poll runs the poll statement of mode that p asks for: under p's term, if
// any, the statement of pollTermed, with the term's number as its last
// argument; a plain poll on the topic's partition (see onTopic). It
// returns the tasks and the mode that the topic's limits call for, as far
// as the statement found.
func (r *Repository) poll(ctx context.Context, db DB, topic string, size int, p check.Polling, mode pollMode) ([]taskapi.Task, pollMode, error) {
	statements, onPartition, term := &r.q.poll[mode], &r.q.onPartition.poll, []any(nil)
	if p.Term != nil {
		statements, onPartition, term = &r.q.pollTermed[mode], &r.q.onPartition.pollTermed, []any{p.Term.Number}
	}
	c := 0
	if p.Condition != taskapi.Unconditional {
		c = 1
	}
	if mode != plainPoll {
		return r.pollWith(ctx, db, topic, size, p, mode, statements[p.Order][c], false, term, nil)
	}
	var (
		tasks []taskapi.Task
		found pollMode
	)
	err := r.onTopic(db, topic, statements[p.Order][c], onPartition[p.Order][c], func(sql string, generic bool) (err error) {
		if term == nil && floorable(mode, p.Order, c == 1) {
			tasks, found, err = r.pollFloored(ctx, db, topic, size, p, sql, generic)
		} else {
			tasks, found, err = r.pollWith(ctx, db, topic, size, p, mode, sql, generic, term, nil)
		}
		return err
	})
	return tasks, found, err
}

// pollFloored runs sql, a plain poll statement that starts from a floor
// (see floor.go): in a round trip of taskpg's own on the topic's partition
// (generic) from the topic's floor, and once more from the index's start
// when the poll from the floor took nothing; elsewhere from the start.
func (r *Repository) pollFloored(ctx context.Context, db DB, topic string, size int, p check.Polling, sql string, generic bool) ([]taskapi.Task, pollMode, error) {
	if !generic || scopeOf(db) != own {
		return r.pollWith(ctx, db, topic, size, p, plainPoll, sql, generic, []any{int64(0)}, nil)
	}
	f := r.floorOf(topic)
	for {
		now, mark := time.Now(), floorMark{}
		start := f.start(now, r.floorStreak, r.floorEvery)
		tasks, found, err := r.pollWith(ctx, db, topic, size, p, plainPoll, sql, true, []any{start}, &mark)
		if err != nil {
			r.rewound(topic) // its claims may be undone, by a failover say
			return nil, found, err
		}
		f.record(now, start, len(tasks), mark)
		if start == 0 || len(tasks) > 0 || found != plainPoll {
			return tasks, found, nil
		}
	}
}

// pollWith runs statement, the poll of mode that p asks for (generic: see
// step), after the topic's advisory lock when the poll is conditional, and
// after the topic's limit lock in a limited mode. The trailing arguments
// follow the size (and the blocking states): a term's number, or a floor;
// a floored poll's mark goes to mark.
func (r *Repository) pollWith(ctx context.Context, db DB, topic string, size int, p check.Polling, mode pollMode,
	statement string, generic bool, trailing []any, mark *floorMark) ([]taskapi.Task, pollMode, error) {
	var (
		tasks []taskapi.Task
		t     taskapi.Task
	)
	unknown, found := false, mode
	poll := step{sql: statement, args: append([]any{topic, r.owner, size}, trailing...), generic: generic,
		dest: []any{&t.Sequence, &t.Identifier, &t.Input},
		each: func() error {
			if t.Sequence == markUnknownOwner {
				unknown = true
			} else if t.Sequence == markFloor {
				return readMark(mark, t)
			} else if m, held, ok := modeOf(t.Sequence); ok {
				found = m
				if held && p.Note != nil {
					p.Note.Held = true
				}
			} else {
				tasks = append(tasks, t)
			}
			return nil
		}}
	var steps []step
	if p.Condition != taskapi.Unconditional {
		// The lock and the poll in one round trip, in one transaction,
		// which holds the lock until the poll is committed; the poll's
		// snapshot is taken once the lock is held.
		poll.args = append([]any{topic, r.owner, size, ordinals(p.Blocking())}, trailing...)
		steps = append(steps, step{sql: pollLock, args: []any{r.pollKey(topic)}, generic: true})
	}
	jitOff, jitBack := unjitted(db, mode)
	steps = append(steps, jitOff...)
	if mode != plainPoll {
		// The statement counts the Active limit (1), or both limits (2).
		counted := min(int(mode), 2)
		steps = append(steps, step{sql: limitLock, args: []any{r.plain + "." + topic, topic, strconv.Itoa(counted)}})
	}
	steps = append(steps, poll)
	steps = append(steps, jitBack...)
	if err := pipeline(ctx, db, steps...); err != nil {
		return nil, found, err
	}
	if unknown {
		return nil, found, fmt.Errorf("owner %q is not registered: %w", check.Short(r.owner), taskapi.ErrUnknownOwner)
	}
	return tasks, found, nil
}

// The planner prices a poll under limits beside a large backlog (its
// counts per identifier) above jit_above_cost, and under the server's
// default jit = on compiling it takes far longer than running it: 0.1 to
// 4 s against 4 to 66 ms beside 100,000 Ready tasks of one topic (see
// TestLimitedPollsStayCheap). Such a poll runs with jit off, and with
// bitmap scans off: its reads of the keyed index are short ranges that end
// at a limit, which a bitmap scan reads whole, visiting the row of every
// dead entry (those of consumed tasks, until a vacuum) at every poll, where
// an index scan marks them dead on its first visit and skips them
// afterwards. Without statistics the planner chose bitmap scans for the
// counts of Active tasks: 4,658 pages for a poll of 100 after 7,000 tasks
// were consumed, against 2,151 once the entries were marked. In a
// transaction of its own the poll sets both for the rest of it
// (unplanned); in a caller's, unplannedSaved turns them off and
// plannedRestored gives the caller its settings back after the poll.
var (
	unplanned       = step{sql: planner.Off}
	unplannedSaved  = step{sql: planner.OffSaved}
	plannedRestored = step{sql: planner.Restored}
)

// unjitted returns the steps that go before and after a poll in mode on db
// so that the server neither compiles it nor reads its ranges by bitmap
// scans: none for a plain poll, whose plan is cheap.
func unjitted(db DB, mode pollMode) (before, after []step) {
	switch {
	case mode == plainPoll:
		return nil, nil
	case scopeOf(db) == inside:
		return []step{unplannedSaved}, []step{plannedRestored}
	}
	return []step{unplanned}, nil
}

// pollKey is the text whose hash keys the advisory lock of a topic's
// conditional polls, shared with taskansi.
func (r *Repository) pollKey(topic string) string {
	return r.schema + "." + topic
}

// Complete records the decisions in one statement that writes only when every
// task is Active and owned by this owner; otherwise the error, a
// *taskapi.StateError, names the tasks that are not.
func (r *Repository) Complete(ctx context.Context, db DB, topic string, completions ...taskapi.Completion) error {
	if run, err := check.Completions(topic, completions); !run {
		return wrapf(err, "complete tasks of %q", topic)
	}
	los, his, states, outputs, named := completeArgs(completions)
	statement, onPartition, args := r.q.complete, r.q.onPartition.complete, []any{topic, los, his, states, outputs, r.owner, named}
	switch {
	case named == 1:
		statement, onPartition, args = r.q.completeOne, r.q.onPartition.completeOne, []any{topic, los[0], states[0], outputs[0], r.owner}
	case scopeOf(db) == own:
		statement = r.q.completeOwn
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := r.completing(ctx, db, topic, statement, onPartition, args)
		if err == nil && tag.RowsAffected() == 0 || shortCompletion(err) {
			err = r.faults(ctx, db, r.q.completeFaults, topic, sequencesOf(los, his), taskapi.ErrNotActive, r.owner)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	return nil
}

// shortCompletion reports whether err is completeOwn's failure for a task
// that was not Active and this owner's.
func shortCompletion(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22P02" && strings.Contains(pgErr.Message, shortPrefix)
}

// completeArgs returns the arguments of the complete statement: the runs of
// consecutive sequences with one decision, as arrays of their bounds, states
// and outputs, and the number of tasks named. When a task is named twice,
// the more severe result wins, and on a tie the later output.
func completeArgs(completions []taskapi.Completion) (los, his []int64, states []int16, outputs []string, named int) {
	runs, named := batch.Decisions(completions)
	los, his = make([]int64, len(runs)), make([]int64, len(runs))
	states, outputs = make([]int16, len(runs)), make([]string, len(runs))
	for i, run := range runs {
		los[i], his[i] = run.Range.From, run.Range.To
		states[i], outputs[i] = int16(run.Key.Result.State()), run.Key.Output
	}
	return los, his, states, outputs, named
}

// sequencesOf returns the sequences of the ranges from los to his.
func sequencesOf(los, his []int64) []int64 {
	var sequences []int64
	for i, lo := range los {
		for s := lo; s <= his[i]; s++ {
			sequences = append(sequences, s)
		}
	}
	return sequences
}

// faults returns the *taskapi.StateError of a call that found not every task
// of sequences in the state it needs: faultQuery (completeFaults or
// revivableFaults) names the ones out of state. When it finds none, as after
// a concurrent change, the error names them all.
func (r *Repository) faults(ctx context.Context, db DB, faultQuery, topic string, sequences []int64, sentinel error, args ...any) error {
	rows, _ := query(ctx, db, faultQuery, append([]any{topic, sequences}, args...)...)
	bad, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(bad) == 0 {
		bad = sequences
	}
	return &taskapi.StateError{Topic: topic, Sequences: bad, Err: sentinel}
}
