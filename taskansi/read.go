package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// allStates is every state, in ordinal order.
var allStates = []taskapi.State{
	taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
	taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant,
}

// filter is the conditions and arguments of the filters that are not empty.
type filter struct {
	sql  string
	args []any
}

// newFilter returns the conditions of a state, reference and identifier
// filter; an empty one filters nothing.
func newFilter(states []taskapi.State, reference, identifier string) filter {
	var f filter
	if len(states) > 0 {
		f.sql += " AND state IN (" + marks(len(states)) + ")"
		f.args = appendArgs(f.args, ordinals(states)...)
	}
	if reference != "" {
		f.sql += " AND reference = ?"
		f.args = append(f.args, reference)
	}
	if identifier != "" {
		f.sql += " AND identifier = ?"
		f.args = append(f.args, identifier)
	}
	return f
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
	f := newFilter(listing.States, listing.Reference, listing.Identifier)
	args := append(append([]any{topic, cursor}, f.args...), size)
	infos, err := queryInfos(ctx, db, r.expand(r.q.page[direction], "{filters}", f.sql), args...)
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
	infos, err := queryInfos(ctx, db, r.expand(r.q.lookup), topic, sequence)
	switch {
	case err != nil:
		return taskapi.Info{}, false, wrapf(err, "look up task %d of %q", sequence, topic)
	case len(infos) == 0:
		return taskapi.Info{}, false, nil
	}
	return infos[0], true, nil
}

func queryInfos(ctx context.Context, db DB, query string, args ...any) ([]taskapi.Info, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var infos []taskapi.Info
	for rows.Next() {
		var (
			info           taskapi.Info
			state, descent int
		)
		err := rows.Scan(&info.Sequence, &info.Identifier, &info.Input, &state, &descent,
			&info.Owner, &info.Reference, &info.Output, utcTime{&info.Created}, utcTime{&info.Completed})
		if err != nil {
			return nil, err
		}
		info.State, info.Descent = taskapi.State(state), taskapi.State(descent)
		infos = append(infos, info)
	}
	return infos, rows.Err()
}

// Count counts tasks per registered topic and state within span.
func (r *Repository) Count(ctx context.Context, db DB, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	err := check.Count(snapshot, filter)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	// The candidates: span, topic, reference and identifier; then the states.
	candidates := newFilter(nil, filter.Reference, filter.Identifier)
	topicFilter, args := "", []any{span.From, span.To}
	if filter.Topic != "" {
		candidates.sql = " AND topic = ?" + candidates.sql
		topicFilter = " AND p.topic = ?"
		args = append(args, filter.Topic)
	}
	states := newFilter(filter.States, "", "")
	args = append(append(args, candidates.args...), states.args...)
	if filter.Topic != "" {
		args = append(args, filter.Topic)
	}
	query := r.expand(r.q.count[snapshot], "{filters}", candidates.sql, "{states}", states.sql, "{topicFilter}", topicFilter)
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	counts, err := scanCounts(rows)
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	return counts, nil
}

func scanCounts(rows *sql.Rows) (map[string]map[taskapi.State]taskapi.Summary, error) {
	defer rows.Close()
	counts := map[string]map[taskapi.State]taskapi.Summary{}
	for rows.Next() {
		var (
			topic               string
			state, count, bound sql.NullInt64
		)
		if err := rows.Scan(&topic, &state, &count, &bound); err != nil {
			return nil, err
		}
		if counts[topic] == nil {
			counts[topic] = map[taskapi.State]taskapi.Summary{}
		}
		if state.Valid {
			counts[topic][taskapi.State(state.Int64)] = taskapi.Summary{Count: count.Int64, Bound: bound.Int64}
		}
	}
	return counts, rows.Err()
}

// Results counts the completed tasks per registered topic and result, with a
// completion time within [from, to]; a zero time is unbounded.
func (r *Repository) Results(ctx context.Context, db DB, from, to time.Time) (map[string]map[taskapi.Result]int64, error) {
	if from.IsZero() {
		from = earliest
	}
	if to.IsZero() {
		to = latest
	}
	rows, err := db.QueryContext(ctx, r.expand(r.q.results), timeParameter(from), timeParameter(to))
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	results, err := scanResults(rows)
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	return results, nil
}

func scanResults(rows *sql.Rows) (map[string]map[taskapi.Result]int64, error) {
	defer rows.Close()
	results := map[string]map[taskapi.Result]int64{}
	for rows.Next() {
		var (
			topic        string
			state, count sql.NullInt64
		)
		if err := rows.Scan(&topic, &state, &count); err != nil {
			return nil, err
		}
		if results[topic] == nil {
			results[topic] = map[taskapi.Result]int64{}
		}
		if state.Valid {
			result, _ := taskapi.State(state.Int64).Result()
			results[topic][result] = count.Int64
		}
	}
	return results, rows.Err()
}

// Resolve turns a time into a sequence: the lowest sequence created at or
// after at, or MaxSequence (preceding false); the highest sequence created at
// or before at, or Inception (preceding true).
func (r *Repository) Resolve(ctx context.Context, db DB, at time.Time, preceding bool) (int64, error) {
	query, none := r.q.resolveFollowing, taskapi.MaxSequence
	if preceding {
		query, none = r.q.resolvePreceding, taskapi.Inception
	}
	var sequence sql.NullInt64
	err := db.QueryRowContext(ctx, r.expand(query), timeParameter(at)).Scan(&sequence)
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && !sequence.Valid:
		return none, nil
	case err != nil:
		return 0, wrapf(err, "resolve %v", at)
	}
	return sequence.Int64, nil
}
