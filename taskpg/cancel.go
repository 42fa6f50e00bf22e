package taskpg

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/edge"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Canceller[DB] = (*Repository)(nil)

// The statements of cancellation. {cancel} picks the tasks: READY, ACTIVE
// or SUSPENDED ones by sequence ($2), or the READY ones of an identifier
// ($2).
// They are locked first (FOR UPDATE, not SKIP LOCKED): a cancellation waits
// for a poll or a completion that holds a task, and then sees its latest
// state, so that a task is either completed by its owner or cancelled,
// never both. Cancelling ACTIVE tasks notifies the topic's control channel
// ($4), where their owners' runtimes hear it and look at once (see
// ActivationChannel), and its tasks channel ($5), which wakes the
// consumers waiting at the topic's limits for the room it frees. The
// statement returns one row of NULLs when the topic is registered and
// nothing was cancelled, none when it is not registered.
const (
	cancelStatement = `
WITH locked AS (
    SELECT sequence, state FROM {schema}.task WHERE topic = $1 AND {cancel} FOR UPDATE),
cancelled AS (
    UPDATE {schema}.task AS t
    SET state = 9, descent = GREATEST(l.state, t.descent), output = $3, completed = {now}
    FROM locked AS l WHERE t.topic = $1 AND t.sequence = l.sequence
    RETURNING t.sequence, t.identifier, t.input, l.state, CASE WHEN l.state = 0 THEN t.owner END AS owner),
notified AS (
    SELECT pg_notify($4, $1), pg_notify($5, $1) FROM cancelled WHERE owner IS NOT NULL LIMIT 1)
SELECT c.sequence, coalesce(c.identifier, ''), coalesce(c.input, ''), coalesce(c.state, 0), coalesce(c.owner, ''), (SELECT count(*) FROM notified)
FROM {schema}.task_topic AS known LEFT JOIN cancelled AS c ON true
WHERE known.topic = $1`
	cancelBySequence   = `sequence = ANY ($2::bigint[]) AND state IN (0, 1, 4)`
	cancelByIdentifier = `identifier = $2 AND state = 1`
	cancelledRows      = `
SELECT sequence FROM {schema}.task WHERE topic = $1 AND sequence = ANY ($2::bigint[]) AND state = 9
ORDER BY sequence`
)

// Cancel cancels the READY, ACTIVE and SUSPENDED tasks of topic among
// sequences, in one statement (see taskapi.Canceller).
func (r *Repository) Cancel(ctx context.Context, db DB, topic, reason string, sequences ...int64) ([]taskapi.Cancellation, error) {
	if run, err := check.Cancel(topic, reason, sequences); !run {
		return nil, wrapf(err, "cancel tasks of %q", topic)
	}
	got, err := r.cancel(ctx, db, cancelBySequence, topic, sequences, reason)
	return got, wrapf(err, "cancel tasks of %q", topic)
}

// CancelIdentifier cancels the READY tasks of identifier in topic, in one
// statement (see taskapi.Canceller).
func (r *Repository) CancelIdentifier(ctx context.Context, db DB, topic, identifier, reason string) ([]taskapi.Cancellation, error) {
	if err := check.CancelIdentifier(topic, identifier, reason); err != nil {
		return nil, wrapf(err, "cancel the tasks of %q in %q", check.Short(identifier), topic)
	}
	got, err := r.cancel(ctx, db, cancelByIdentifier, topic, identifier, reason)
	return got, wrapf(err, "cancel the tasks of %q in %q", check.Short(identifier), topic)
}

// cancel runs the cancellation statement with the condition cancel and its
// argument.
func (r *Repository) cancel(ctx context.Context, db DB, cancel, topic string, arg any, reason string) ([]taskapi.Cancellation, error) {
	sql := r.fleetSQL(strings.Replace(cancelStatement, "{cancel}", cancel, 1))
	return retrying(ctx, db, func() ([]taskapi.Cancellation, error) {
		var (
			got   []taskapi.Cancellation
			known bool
		)
		err := sealed(ctx, db, func(db DB) error {
			got, known = nil, false
			rows, _ := db.Query(ctx, sql, topic, arg, taskapi.CancelOutput(reason),
				ActivationChannel(r.plain), edge.Channel(edge.TasksBase, r.plain))
			var (
				sequence                 *int64
				identifier, input, owner string
				state, notified          int64
			)
			_, err := pgx.ForEachRow(rows, []any{&sequence, &identifier, &input, &state, &owner, &notified}, func() error {
				known = true
				if sequence != nil {
					got = append(got, taskapi.Cancellation{
						Task:  taskapi.Task{Sequence: *sequence, Identifier: identifier, Input: input},
						From:  taskapi.State(state),
						Owner: owner,
					})
				}
				return nil
			})
			return err
		})
		if err == nil && !known {
			err = unregistered(topic)
		}
		return got, err
	})
}

// Cancelled returns which of sequences of topic are CANCELLED, ascending.
func (r *Repository) Cancelled(ctx context.Context, db DB, topic string, sequences ...int64) ([]int64, error) {
	if run, err := check.Cancel(topic, "", sequences); !run {
		return nil, wrapf(err, "read cancelled tasks of %q", topic)
	}
	rows, _ := db.Query(ctx, r.fleetSQL(cancelledRows), topic, sequences)
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, wrapf(err, "read cancelled tasks of %q", topic)
	}
	return found, nil
}
