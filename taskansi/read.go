package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/partial"
	"github.com/taskrepo/taskrepo/taskapi"
)

// allStates is every state, in ordinal order.
var allStates = []taskapi.State{
	taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
	taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant, taskapi.Cancelled,
}

// filter is the conditions and arguments of the filters that are not empty.
type filter struct {
	sql  string
	args []any
}

// newFilter returns the conditions of a state, reference and identifier
// filter; an empty one filters nothing. A filter on states that a partial
// index holds states the index's predicate too, so that the index serves
// it (see internal/partial): a page of FAILED tasks reads their entries,
// not the whole topic.
func newFilter(states []taskapi.State, reference, identifier string) filter {
	var f filter
	if len(states) > 0 {
		f.sql += " AND state IN (" + marks(len(states)) + ")"
		f.args = appendArgs(f.args, ordinals(states)...)
	}
	if predicate := partial.Predicate(states); predicate != "" {
		f.sql += " AND " + predicate
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
	if run, err := check.Page(topic, listing, cursor, size, direction); !run {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	query, args := r.pageStatement(topic, listing, cursor, size, direction)
	infos, err := queryInfos(ctx, db, query, args...)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q", topic)
	}
	return infos, nil
}

// pageStatement returns the statement of a page and its arguments.
func (r *Repository) pageStatement(topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) (string, []any) {
	f := newFilter(listing.States, listing.Reference, listing.Identifier)
	return r.expand(r.q.page[direction], "{filters}", f.sql), append(append([]any{topic, cursor}, f.args...), size)
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
			&info.Owner, &info.Reference, &info.Output, utcTime{&info.Created}, utcTime{&info.Completed},
			utcTime{&info.NotBefore}, &info.Revivals)
		if err != nil {
			return nil, err
		}
		info.State, info.Descent = taskapi.State(state), taskapi.State(descent)
		infos = append(infos, info)
	}
	return infos, rows.Err()
}

// Count counts tasks per registered topic and state within span. On
// PostgreSQL it reads a few dozen topics at a time (see readChunks).
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
	err = r.eachChunk(ctx, db, topics, filter.Topic == "", func(db DB, chunk []string) error {
		query, args := r.countStatement(snapshot, chunk, filter, span)
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		return forEachRow(rows, func(scan func(...any) error) error {
			var (
				topic               string
				state, count, bound int64
			)
			err := scan(&topic, &state, &count, &bound)
			if counts[topic] != nil {
				counts[topic][taskapi.State(state)] = taskapi.Summary{Count: count, Bound: bound}
			}
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "count tasks")
	}
	return counts, nil
}

// countStatement returns the statement of a count of the topics of chunk
// (every topic for nil) and its arguments.
func (r *Repository) countStatement(snapshot taskapi.Snapshot, chunk []string, filter taskapi.Counting, span taskapi.Range) (string, []any) {
	// The candidates: span, topics, reference and identifier; then the
	// states. Recent filters the states once it kept the newest task of each
	// identifier; Total filters them with the candidates, where a partial
	// index of the states may serve.
	candidates := newFilter(nil, filter.Reference, filter.Identifier)
	states := newFilter(filter.States, "", "")
	if snapshot == taskapi.Total {
		candidates = newFilter(filter.States, filter.Reference, filter.Identifier)
		states.sql, states.args = "", nil
	}
	within, topicArgs := topicFilter(chunk)
	query := r.expand(r.q.count[snapshot], "{topicFilter}", within, "{filters}", candidates.sql, "{states}", states.sql)
	return query, append(append(append([]any{span.From, span.To}, topicArgs...), candidates.args...), states.args...)
}

// countedTopics returns the registered topics that a topic filter passes:
// every one for no filter.
func (r *Repository) countedTopics(ctx context.Context, db DB, only string) ([]string, error) {
	if only == "" {
		return r.allTopics(ctx, db)
	}
	return queryStrings(ctx, db, r.expand(r.q.knownTopic), only)
}

// eachChunk calls read with the topics a statement reads: on PostgreSQL a few
// dozen at a time (see readChunks); elsewhere once, with no topic (the
// whole table) when all is set, else with the given topics.
func (r *Repository) eachChunk(ctx context.Context, db DB, topics []string, all bool, read func(db DB, chunk []string) error) error {
	switch {
	case r.dialect.partitioned:
		return r.readChunks(ctx, db, topics, read)
	case all:
		return read(db, nil)
	case len(topics) == 0:
		return nil
	}
	return read(db, topics)
}

// Results counts the completed tasks per registered topic and result, with a
// completion time within [from, to]; a zero time is unbounded. On
// PostgreSQL it reads a few dozen topics at a time (see readChunks).
func (r *Repository) Results(ctx context.Context, db DB, from, to time.Time) (map[string]map[taskapi.Result]int64, error) {
	if from.IsZero() {
		from = earliest
	}
	if to.IsZero() {
		to = latest
	}
	topics, err := r.allTopics(ctx, db)
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	results := batch.ResultsOf(topics)
	err = r.eachChunk(ctx, db, topics, true, func(db DB, chunk []string) error {
		within, topicArgs := topicFilter(chunk)
		rows, err := db.QueryContext(ctx, r.expand(r.q.results, "{topicFilter}", within),
			append([]any{timeParameter(from), timeParameter(to)}, topicArgs...)...)
		if err != nil {
			return err
		}
		return forEachRow(rows, func(scan func(...any) error) error {
			var (
				topic        string
				state, count int64
			)
			err := scan(&topic, &state, &count)
			if result, ok := taskapi.State(state).Result(); ok && results[topic] != nil {
				results[topic][result] = count
			}
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "count results")
	}
	return results, nil
}

// Resolve turns a time into a sequence: the lowest sequence created at or
// after at, or MaxSequence (preceding false); the highest sequence created at
// or before at, or Inception (preceding true). On PostgreSQL it reads every
// topic a few dozen at a time (see readChunks); PageAt of one topic reads
// that topic only.
func (r *Repository) Resolve(ctx context.Context, db DB, at time.Time, preceding bool) (int64, error) {
	var topics []string
	if r.dialect.partitioned {
		var err error
		if topics, err = r.allTopics(ctx, db); err != nil {
			return 0, wrapf(err, "resolve %v", at.UTC())
		}
	}
	sequence, err := r.resolve(ctx, db, topics, true, at, preceding)
	if err != nil {
		return 0, wrapf(err, "resolve %v", at.UTC())
	}
	return sequence, nil
}

// resolve resolves at within topics, or all of them.
func (r *Repository) resolve(ctx context.Context, db DB, topics []string, all bool, at time.Time, preceding bool) (int64, error) {
	query, found := r.q.resolveFollowing, taskapi.MaxSequence
	better := func(s int64) bool { return s < found }
	if preceding {
		query, found = r.q.resolvePreceding, taskapi.Inception
		better = func(s int64) bool { return s > found }
	}
	err := r.eachChunk(ctx, db, topics, all, func(db DB, chunk []string) error {
		within, topicArgs := topicFilter(chunk)
		var sequence sql.NullInt64
		err := db.QueryRowContext(ctx, r.expand(query, "{topicFilter}", within),
			append([]any{timeParameter(at)}, topicArgs...)...).Scan(&sequence)
		if err == nil && sequence.Valid && better(sequence.Int64) {
			found = sequence.Int64
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return found, err
}

// PageAt pages tasks of topic from a point in time: going Forward from the
// first task of the topic created at or after t, going Backward from the
// last one created at or before t. It is taskapi.PageAt, which Go cannot
// instantiate from a *sql.DB, reading the one topic.
func (r *Repository) PageAt(ctx context.Context, db DB, topic string, listing taskapi.Listing, t time.Time, size int, direction taskapi.Direction) ([]taskapi.Info, error) {
	if run, err := check.PageAt(topic, listing, size, direction); !run {
		return nil, wrapf(err, "page tasks of %q at %v", topic, t.UTC())
	}
	at, err := r.resolve(ctx, db, []string{topic}, false, t, direction == taskapi.Backward)
	if err != nil {
		return nil, wrapf(err, "page tasks of %q at %v", topic, t.UTC())
	}
	cursor, ok := batch.PageCursor(at, direction)
	if !ok {
		return nil, nil
	}
	return r.Page(ctx, db, topic, listing, cursor, size, direction)
}
