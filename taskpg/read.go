package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// allStates is the state filter that filters nothing.
var allStates = []taskapi.State{
	taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
	taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant, taskapi.Cancelled,
}

// stateFilter returns the ordinals of states, or of every state when none are
// given.
func stateFilter(states []taskapi.State) []int16 {
	if len(states) == 0 {
		states = allStates
	}
	return ordinals(states)
}

// Page lists up to size tasks of topic matching listing, walking from cursor
// in direction.
func (r *Repository) Page(ctx context.Context, db DB, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	if run, err := check.Page(topic, listing, cursor, size, direction); !run {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	sql, args := r.pageStatement(topic, listing, cursor, size, direction)
	rows, _ := query(ctx, db, sql, args...)
	infos, err := pgx.CollectRows(rows, scanInfo)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	return infos, nil
}

// pageStatement returns the statement of a page and its arguments. READY
// alone reads its two indexes (ready.go). Any other single state is an
// equality, which PostgreSQL plans for the value: the partial index that
// holds the state, if one does (task_rare, task_active), serves it, and
// task_rare, whose key has the state before the sequence, yields the
// state's tasks in sequence order, so that a page of FAILED tasks reads a
// page of entries. (A list of states, even of one, yields them unordered
// from that index, to be sorted.)
func (r *Repository) pageStatement(topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) (string, []any) {
	switch {
	case readyOnly(listing.States):
		return r.q.ready.page[direction], []any{topic, cursor, listing.Reference, listing.Identifier, size}
	case len(listing.States) == 1:
		return r.q.pageOne[direction], []any{topic, cursor, int16(listing.States[0]), listing.Reference, listing.Identifier, size}
	}
	return r.q.page[direction], []any{topic, cursor, stateFilter(listing.States), listing.Reference, listing.Identifier, size}
}

// Lookup finds the task of topic with sequence.
func (r *Repository) Lookup(ctx context.Context, db DB, topic string, sequence int64) (taskapi.Info, bool, error) {
	if err := check.Topic(topic); err != nil {
		return taskapi.Info{}, false, wrapf(err, "look up task %d of %q", sequence, topic)
	}
	rows, _ := query(ctx, db, r.q.lookup, topic, sequence)
	info, err := pgx.CollectExactlyOneRow(rows, scanInfo)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return taskapi.Info{}, false, nil
	case err != nil:
		return taskapi.Info{}, false, wrapf(err, "look up task %d of %q", sequence, topic)
	}
	return info, true, nil
}

func scanInfo(row pgx.CollectableRow) (taskapi.Info, error) {
	var (
		info                 taskapi.Info
		state, descent       int16
		completed, notBefore *time.Time
	)
	err := row.Scan(&info.Sequence, &info.Identifier, &info.Input, &state, &descent,
		&info.Owner, &info.Reference, &info.Output, &info.Created, &completed, &notBefore, &info.Revivals)
	info.State, info.Descent = taskapi.State(state), taskapi.State(descent)
	info.Created, info.Completed, info.NotBefore = utc(info.Created), utcOrZero(completed), utcOrZero(notBefore)
	return info, err
}

// utcOrZero returns utc(*t), or the zero time for a NULL timestamp.
func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return utc(*t)
}

// utc returns the wall-clock reading of t, a timestamp column that stores UTC,
// in UTC, whatever location pgx scanned it in.
func utc(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// Count counts tasks per registered topic and state within span, a few dozen
// topics at a time (see readChunks).
func (r *Repository) Count(ctx context.Context, db DB, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	err := check.Count(snapshot, filter)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	topics, err := r.countedTopics(ctx, db, filter.Topic)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	counts := batch.Counts(topics)
	var (
		topic        string
		state        int16
		count, bound int64
	)
	err = readChunks(ctx, db, topics, func(db DB, chunk []string) error {
		sql, args := r.countStatement(snapshot, chunk, filter, span)
		rows, _ := query(ctx, db, sql, args...)
		_, err := pgx.ForEachRow(rows, []any{&topic, &state, &count, &bound}, func() error {
			counts[topic][taskapi.State(state)] = taskapi.Summary{Count: count, Bound: bound}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	return counts, nil
}

// countStatement returns the statement of a count of the topics of chunk
// and its arguments: READY alone counts its two indexes (ready.go), and a
// single state of every task is an equality, as in pageStatement, that the
// partial index holding the state serves.
func (r *Repository) countStatement(snapshot taskapi.Snapshot, chunk []string, filter taskapi.Counting, span taskapi.Range) (string, []any) {
	switch {
	case snapshot == taskapi.Total && readyOnly(filter.States):
		return r.q.ready.count, []any{chunk, span.From, span.To, filter.Reference, filter.Identifier}
	case snapshot == taskapi.Total && len(filter.States) == 1:
		return r.q.countOne, []any{chunk, span.From, span.To, filter.Reference, filter.Identifier, int16(filter.States[0])}
	}
	return r.q.count[snapshot], []any{chunk, span.From, span.To, filter.Reference, filter.Identifier, stateFilter(filter.States)}
}

// countedTopics returns the registered topics that a topic filter passes:
// every one for no filter.
func (r *Repository) countedTopics(ctx context.Context, db DB, only string) ([]string, error) {
	if only == "" {
		return r.allTopics(ctx, db)
	}
	rows, _ := db.Query(ctx, r.q.knownTopics, []string{only})
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Results counts the completed tasks per registered topic and result, with a
// completion time within [from, to]; a zero time is unbounded. It reads a few
// dozen topics at a time (see readChunks).
func (r *Repository) Results(ctx context.Context, db DB, from, to time.Time) (map[string]map[taskapi.Result]int64, error) {
	topics, err := r.allTopics(ctx, db)
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	results := batch.ResultsOf(topics)
	var (
		topic string
		state int16
		count int64
	)
	err = readChunks(ctx, db, topics, func(db DB, chunk []string) error {
		rows, _ := query(ctx, db, r.q.results, chunk, timeParameter(from), timeParameter(to))
		_, err := pgx.ForEachRow(rows, []any{&topic, &state, &count}, func() error {
			result, _ := taskapi.State(state).Result()
			results[topic][result] = count
			return nil
		})
		return err
	})
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	return results, nil
}

// timeParameter returns t as a timestamp in UTC, or nil (NULL) for the zero
// time.
func timeParameter(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return timestamp(t)
}

// Resolve turns a time into a sequence: the lowest sequence created at or
// after at, or MaxSequence (preceding false); the highest sequence created at
// or before at, or Inception (preceding true). It reads every topic, a few
// dozen at a time (see readChunks); PurgeBefore and PageAt of one topic read
// that topic only.
func (r *Repository) Resolve(ctx context.Context, db DB, at time.Time, preceding bool) (int64, error) {
	topics, err := r.allTopics(ctx, db)
	if err != nil {
		return 0, wrapf(err, "resolve %v", at.UTC())
	}
	sequence, err := r.resolve(ctx, db, topics, at, preceding)
	if err != nil {
		return 0, wrapf(err, "resolve %v", at.UTC())
	}
	return sequence, nil
}

// resolve resolves at within topics.
func (r *Repository) resolve(ctx context.Context, db DB, topics []string, at time.Time, preceding bool) (int64, error) {
	sql, found := r.q.resolveFollowing, taskapi.MaxSequence
	better := func(s int64) bool { return s < found }
	if preceding {
		sql, found = r.q.resolvePreceding, taskapi.Inception
		better = func(s int64) bool { return s > found }
	}
	err := readChunks(ctx, db, topics, func(db DB, chunk []string) error {
		var sequence *int64
		rows, _ := query(ctx, db, sql, chunk, timestamp(at))
		_, err := pgx.ForEachRow(rows, []any{&sequence}, func() error {
			if sequence != nil && better(*sequence) {
				found = *sequence
			}
			return nil
		})
		return err
	})
	return found, err
}

// PurgeBefore purges, in the default states Failed to Cancelled, every task of
// topic created at or before t, and none created after it, in one statement:
// taskapi.PurgeBefore, which Go cannot instantiate from a pool.
func (r *Repository) PurgeBefore(ctx context.Context, db DB, topic string, t time.Time) (int64, error) {
	if err := check.Topic(topic); err != nil {
		return 0, wrapf(err, "purge tasks of %q before %v", topic, t.UTC())
	}
	tag, err := retrying(ctx, db, func() (pgconn.CommandTag, error) {
		return exec(ctx, db, r.q.purgeBefore, topic, timestamp(t), ordinals(check.DefaultPurged))
	})
	if err != nil {
		return 0, wrapf(err, "purge tasks of %q before %v", topic, t.UTC())
	}
	return tag.RowsAffected(), nil
}

// PageAt pages tasks of topic from a point in time: going Forward from the
// first task of the topic created at or after t, going Backward from the
// last one created at or before t. It is taskapi.PageAt, which Go cannot
// instantiate from a pool, reading the one topic.
func (r *Repository) PageAt(ctx context.Context, db DB, topic string, listing taskapi.Listing, t time.Time, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	if run, err := check.PageAt(topic, listing, size, direction); !run {
		return nil, wrapf(err, "page tasks of %q at %v", topic, t.UTC())
	}
	preceding := direction == taskapi.Backward
	at, err := r.resolve(ctx, db, []string{topic}, t, preceding)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q at %v", topic, t.UTC())
	}
	cursor, ok := batch.PageCursor(at, direction)
	if !ok {
		return nil, nil
	}
	return r.Page(ctx, db, topic, listing, cursor, size, direction)
}
