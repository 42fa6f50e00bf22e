package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// allStates is the state filter that filters nothing.
var allStates = []taskapi.State{
	taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
	taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant,
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
	err := check.Page(topic, listing, direction)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	if size < 1 || cursor < taskapi.Inception ||
		direction == taskapi.Forward && cursor == taskapi.MaxSequence ||
		direction == taskapi.Backward && cursor == taskapi.Inception {
		return nil, nil
	}
	rows, _ := db.Query(ctx, r.q.page[direction], topic, cursor, stateFilter(listing.States),
		listing.Reference, listing.Identifier, size)
	infos, err := pgx.CollectRows(rows, scanInfo)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	return infos, nil
}

// Lookup finds the task of topic with sequence.
func (r *Repository) Lookup(ctx context.Context, db DB, topic string, sequence int64) (taskapi.Info, bool, error) {
	if err := check.Topic(topic); err != nil {
		return taskapi.Info{}, false, wrapf(err, "look up task %d of %q", sequence, topic)
	}
	rows, _ := db.Query(ctx, r.q.lookup, topic, sequence)
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
		info           taskapi.Info
		state, descent int16
		completed      *time.Time
	)
	err := row.Scan(&info.Sequence, &info.Identifier, &info.Input, &state, &descent,
		&info.Owner, &info.Reference, &info.Output, &info.Created, &completed)
	info.State, info.Descent = taskapi.State(state), taskapi.State(descent)
	info.Created = utc(info.Created)
	if completed != nil {
		info.Completed = utc(*completed)
	}
	return info, err
}

// utc returns the wall-clock reading of t, a timestamp column that stores UTC,
// in UTC, whatever location pgx scanned it in.
func utc(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// Count counts tasks per registered topic and state within span.
func (r *Repository) Count(ctx context.Context, db DB, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	err := check.Count(snapshot, filter)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	rows, _ := db.Query(ctx, r.q.count[snapshot], filter.Topic, span.From, span.To,
		filter.Reference, filter.Identifier, stateFilter(filter.States))
	counts := map[string]map[taskapi.State]taskapi.Summary{}
	var (
		topic        string
		state        *int16
		count, bound *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&topic, &state, &count, &bound}, func() error {
		if counts[topic] == nil {
			counts[topic] = map[taskapi.State]taskapi.Summary{}
		}
		if state != nil {
			counts[topic][taskapi.State(*state)] = taskapi.Summary{Count: *count, Bound: *bound}
		}
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	return counts, nil
}

// Results counts the completed tasks per registered topic and result, with a
// completion time within [from, to]; a zero time is unbounded.
func (r *Repository) Results(ctx context.Context, db DB, from, to time.Time) (map[string]map[taskapi.Result]int64, error) {
	rows, _ := db.Query(ctx, r.q.results, timeParameter(from), timeParameter(to))
	results := map[string]map[taskapi.Result]int64{}
	var (
		topic string
		state *int16
		count *int64
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &state, &count}, func() error {
		if results[topic] == nil {
			results[topic] = map[taskapi.Result]int64{}
		}
		if state != nil {
			result, _ := taskapi.State(*state).Result()
			results[topic][result] = *count
		}
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	return results, nil
}

// timeParameter returns t in UTC, or nil (NULL) for the zero time.
func timeParameter(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// Resolve turns a time into a sequence: the lowest sequence created at or
// after at, or MaxSequence (preceding false); the highest sequence created at
// or before at, or Inception (preceding true).
func (r *Repository) Resolve(ctx context.Context, db DB, at time.Time, preceding bool) (int64, error) {
	query, none := r.q.resolveFollowing, taskapi.MaxSequence
	if preceding {
		query, none = r.q.resolvePreceding, taskapi.Inception
	}
	var sequence *int64
	if err := db.QueryRow(ctx, query, at.UTC()).Scan(&sequence); err != nil {
		return 0, wrapf(err, "resolve %v", at)
	}
	if sequence == nil {
		return none, nil
	}
	return *sequence, nil
}
