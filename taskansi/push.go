package taskansi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/edge"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Push stores creations as tasks of topic and applies insertion to older
// tasks with the same identifiers, in a transaction of its own. On
// PostgreSQL, unless wake-ups are off (see WithWakeUps), the first push of
// a topic in an interval also notifies the topic's channel, in the
// statement that locks the topic: the notification is delivered when the
// push commits, and not at all when it rolls back.
func (r *Repository) Push(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if run, err := check.Push(topic, insertion, creations); !run {
		return nil, wrapf(err, "push to %q", topic)
	}
	var tasks []taskapi.Task
	err := r.retrying(ctx, db, func(db DB) error {
		points := r.pointLocks(db)
		return r.atomic(ctx, db, func(tx DB) (err error) {
			tasks, err = r.insert(ctx, tx, topic, insertion, creations, nil, points)
			return err
		})
	})
	if err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	return tasks, nil
}

// older are the states of the older tasks that each insertion mode changes.
var older = map[taskapi.Insertion][2]taskapi.State{
	taskapi.Supersede: {taskapi.Ready, taskapi.Ready},
	taskapi.Replace:   {taskapi.Ready, taskapi.Succeeded},
	taskapi.Delete:    {taskapi.Ready, taskapi.Redundant},
}

// pointLocks reports whether the locking reads of a call on db name rows by
// points: where the dialect wants it (MySQL), in a caller's transaction,
// whose isolation level may be REPEATABLE READ, under which InnoDB would lock
// the gaps that a range read passes over, and with them other transactions'
// inserts.
func (r *Repository) pointLocks(db DB) bool {
	return r.dialect.points && inside(db)
}

// insert pushes valid creations, at least one, inside a transaction: it
// locks the topic (notifying its channel when this is the first push of the
// topic in the interval of wake-ups), applies insertion to the older tasks
// and inserts the stored creations. It returns the stored tasks in
// creation order. revivals, unless nil, holds the count of revivals of each
// creation, for a revival, whose insertion stores every creation (never
// Delete); a push stores none.
func (r *Repository) insert(ctx context.Context, tx DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int, points bool) ([]taskapi.Task, error) {
	deferred := edge.Deferred(creations)
	stamp := r.wake.Claim(topic, deferred)
	tasks, err := r.store(ctx, tx, r.wake.topicStatement(stamp != 0, deferred), topic, insertion, creations, revivals, points)
	if err != nil {
		r.wake.Forget(topic, deferred, stamp)
	}
	return tasks, err
}

// store pushes as insert does, locking the topic with lockTopic, and admits
// the stored tasks when the topic has a capacity (see admit).
func (r *Repository) store(ctx context.Context, tx DB, lockTopic, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, revivals []int, points bool) ([]taskapi.Task, error) {
	capacity, err := r.lockTopic(ctx, tx, lockTopic, topic)
	if err == nil {
		err = r.openAdmission(ctx, tx, capacity)
	}
	if err != nil {
		return nil, err
	}
	if insertion != taskapi.Append {
		if err := r.applyInsertion(ctx, tx, topic, insertion, creations, points); err != nil {
			return nil, err
		}
	}
	stored, states := batch.Stored(insertion, creations)
	if revivals == nil {
		revivals = make([]int, len(stored))
	}
	sequences, err := r.insertStored(ctx, tx, topic, stored, states, revivals)
	if err == nil {
		err = r.admit(ctx, tx, topic, capacity, batch.ReadyIdentifiers(stored, states), points)
	}
	if err != nil {
		return nil, err
	}
	tasks := make([]taskapi.Task, len(stored))
	for i, c := range stored {
		tasks[i] = taskapi.Task{Sequence: sequences[i], Identifier: c.Identifier, Input: c.Input}
	}
	return tasks, nil
}

// insertStored inserts the stored creations, with their counts of
// revivals, in as few statements as the limits allow, in order, and
// returns their sequences in creation order.
func (r *Repository) insertStored(ctx context.Context, tx DB, topic string, stored []taskapi.Creation, states []taskapi.State, revivals []int) ([]int64, error) {
	indices := make([]int, len(stored))
	for i := range indices {
		indices[i] = i
	}
	weight := func(i int) int { return len(stored[i].Identifier) + len(stored[i].Reference) + len(stored[i].Input) }
	sequences := make([]int64, 0, len(stored))
	err := batch.SplitBy(indices, chunk, statementBytes, weight, func(piece []int) error {
		from, to := piece[0], piece[len(piece)-1]+1
		seqs, err := r.insertRows(ctx, tx, topic, stored[from:to], states[from:to], revivals[from:to])
		sequences = append(sequences, seqs...)
		return err
	})
	return sequences, err
}

// applyInsertion marks Redundant or deletes the older tasks of topic with the
// identifiers of creations, skipping rows that others locked. It first takes
// the identifiers' locks, so that it sees what a push of the same
// identifiers that came first committed.
func (r *Repository) applyInsertion(ctx context.Context, tx DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation, points bool) error {
	identifiers := make([]string, len(creations))
	for i, c := range creations {
		identifiers[i] = c.Identifier
	}
	identifiers = batch.Group(identifiers)
	if err := r.lockIdentifiers(ctx, tx, topic, identifiers); err != nil {
		return err
	}
	span := older[insertion]
	read := r.q.pushOlder
	if points {
		read = r.q.pushOlderRead
	}
	var sequences []int64
	err := batch.Split(identifiers, chunk, func(piece []string) error {
		args := append(appendArgs([]any{topic}, piece...), int(span[0]), int(span[1]))
		seqs, err := querySequences(ctx, tx, r.expand(read, "{list}", marks(len(piece))), args...)
		sequences = append(sequences, seqs...)
		return err
	})
	if err == nil && points {
		sequences, err = r.lockPoints(ctx, tx, r.q.pushOlderPoints, topic, sequences, int(span[0]), int(span[1]))
	}
	if err != nil {
		return err
	}
	change := r.q.pushRedundant
	if insertion == taskapi.Delete {
		change = r.q.pushDelete
	}
	return r.execSequences(ctx, tx, change, topic, sequences)
}

// lockPoints runs query, a locking read of the tasks of topic with the given
// sequences ({list}) followed by more arguments, in pieces, and returns the
// sequences it locked.
func (r *Repository) lockPoints(ctx context.Context, tx DB, query, topic string, sequences []int64, more ...any) ([]int64, error) {
	slices.Sort(sequences)
	var locked []int64
	err := batch.Split(sequences, chunk, func(piece []int64) error {
		args := append(appendArgs([]any{topic}, piece...), more...)
		seqs, err := querySequences(ctx, tx, r.expand(query, "{list}", marks(len(piece))), args...)
		locked = append(locked, seqs...)
		return err
	})
	return locked, err
}

// execSequences runs query, which takes topic and a {list} of sequences, in
// pieces.
func (r *Repository) execSequences(ctx context.Context, tx DB, query, topic string, sequences []int64) error {
	return batch.Split(sequences, chunk, func(piece []int64) error {
		_, err := tx.ExecContext(ctx, r.expand(query, "{list}", marks(len(piece))), appendArgs([]any{topic}, piece...)...)
		return err
	})
}

// insertRows inserts one piece of stored creations, with their not-before
// times and their counts of revivals, and returns their sequences in
// creation order.
func (r *Repository) insertRows(ctx context.Context, tx DB, topic string, stored []taskapi.Creation, states []taskapi.State, revivals []int) ([]int64, error) {
	args := make([]any, 0, 8*len(stored))
	for i, c := range stored {
		args = append(args, topic, c.Identifier, int(states[i]), nullable(c.Reference), nullable(c.Input), now{},
			nullableTime(c.NotBefore), revivals[i])
	}
	args = r.args(args...)
	rows := strings.TrimSuffix(strings.Repeat(r.q.pushRow+", ", len(stored)), ", ")
	query := r.expand(r.q.pushInsert, "{rows}", rows)
	if r.dialect.returning {
		sequences, err := querySequences(ctx, tx, query, args...)
		slices.Sort(sequences) // ascending sequences follow creation order
		if err == nil && len(sequences) != len(stored) {
			err = fmt.Errorf("stored %d tasks of %d", len(sequences), len(stored))
		}
		return sequences, err
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	first, err := res.LastInsertId() // of consecutive values
	if err != nil {
		return nil, err
	}
	sequences := make([]int64, len(stored))
	for i := range sequences {
		sequences[i] = first + int64(i)
	}
	return sequences, nil
}

// nullable returns nil (NULL) for the empty string, which means absent.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// querySequences runs a query that returns one sequence per row.
func querySequences(ctx context.Context, db DB, query string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sequences []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		sequences = append(sequences, s)
	}
	return sequences, rows.Err()
}
