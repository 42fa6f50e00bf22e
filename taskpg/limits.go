package taskpg

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Regulator[DB] = (*Repository)(nil)

// The limits of a topic live in its row of task_topic (NULL for none);
// migration 00011 tells how polls keep them.
const (
	limitsSet  = `UPDATE {schema}.task_topic SET active_limit = NULLIF($2::bigint, 0), identifier_limit = NULLIF($3::bigint, 0) WHERE topic = $1`
	limitsRows = `
SELECT topic, coalesce(active_limit, 0), coalesce(identifier_limit, 0) FROM {schema}.task_topic
WHERE active_limit IS NOT NULL OR identifier_limit IS NOT NULL`
)

// Polls of a topic with limits. A poll that knows the topic has limits
// takes the topic's limit lock first, in its own statement of the round
// trip (limitLock), which also tells the trigger of migration 00011 that
// this poll counts for itself: the poll statement's snapshot, taken once the
// lock is held, sees every claim committed before, so the statement's counts
// are exact and the trigger lets its rows through unchecked. The statement
// ends the trigger's trust as its last step (limitedMarker, which UNION ALL
// reads after the update). Any other claim in the topic (a poll that did not
// know, taskansi's) is checked row by row by the trigger, which then marks
// the transaction as having seen the limits, so that taskpg's plain poll
// statement reports them (plainMarker) and the repository's next polls know.
const (
	limitLock = `SELECT pg_advisory_xact_lock(1952543598, hashtext($1)), set_config('taskrepo.limited', 'counted:' || $3 || ':' || $2, true)`
	// limitTake, {with} of a limited poll: n is how many tasks the poll may
	// take ($3, or fewer under the Active limit), k the limit per
	// identifier. The Active tasks are counted once, at most the limit.
	limitTake = `RECURSIVE take (n, k) AS (
    SELECT coalesce((
        SELECT CASE WHEN l.active_limit IS NULL THEN $3::bigint
                    ELSE greatest(0, least($3::bigint, l.active_limit - (
                        SELECT count(*) FROM (SELECT FROM {schema}.task AS a
                                              WHERE a.topic = $1 AND a.state = 0 LIMIT l.active_limit) AS a))) END
        FROM {schema}.task_topic AS l WHERE l.topic = $1), 0),
           (SELECT identifier_limit FROM {schema}.task_topic WHERE topic = $1)),
`
	// plainMarker, {marker} of a plain poll, and limitedMarker, of a limited
	// one, run once the update is done (UNION ALL reads its branches in
	// turn). In a plain poll, a row of sequence -1 says that the trigger of
	// migration 00011 checked a claim: the topic has limits. A limited poll
	// always returns a row of sequence -10 - bits with the topic's limits
	// (bits: 1 for an Active limit, plus 2 for one per identifier) and
	// whether they held the poll back (plus 4), which also ends the
	// trigger's trust. The plain poll's marker reads no table:
	// it costs the polls of topics without limits a few microseconds.
	plainMarker = `
UNION ALL
SELECT -1, '', '' WHERE current_setting('taskrepo.limited', true) = 'seen:' || $1`
	limitedMarker = `
UNION ALL
SELECT -10 - m.mode - 4 * ({held})::int, '', '' FROM (` + limitsMode + `) AS m
WHERE set_config('taskrepo.limited', '', true) IS NOT NULL`
	limitsMode = `
    SELECT (active_limit IS NOT NULL)::int + 2 * (identifier_limit IS NOT NULL)::int AS mode
    FROM {schema}.task_topic WHERE topic = $1`
	// keyedCandidates, {candidates} of a keyed poll, for a topic with a
	// limit per identifier: of each identifier below its limit, its earliest
	// due Ready tasks in poll order, as many as it has room for (a task that
	// waits for its time holds none back); of those, the first {take} in
	// poll order that meet the poll's condition. Two ways find them, each
	// cheap where the other is not:
	//
	// - First it reads the first {take} candidates of a plain poll (walked),
	//   checking each one's room in the keyed index. That is enough when as
	//   many have room, or when there are no more: the common case among
	//   many identifiers, most of them with room.
	// - Otherwise it reads the identifiers with Ready or Active tasks, one
	//   descent of the keyed index each (a loose index scan), and of each its
	//   Active tasks and earliest Ready ones: its cost grows with the
	//   identifiers, not with their tasks, however many wait behind an
	//   identifier at its limit.
	//
	// The candidates are locked before the update claims any, as a plain
	// poll's are. An identifier's due tasks are read as
	// "coalesce(not_before, '-infinity') <= now", which no partial index's
	// predicate matches: "not_before IS NULL OR ..." let the planner, with no
	// statistics after a consumption, read the whole ready and deferred
	// indexes for each identifier (66,000 pages for a poll of 100), rather
	// than the keyed index's range of the identifier.
	keyedCandidates = `
        SELECT l.ctid FROM {schema}.task AS l WHERE l.topic = $1 AND l.ctid = ANY (ARRAY(
        SELECT c.ctid FROM (
            SELECT ctid, sequence FROM walked WHERE room AND (SELECT walked FROM enough)
            UNION ALL
            SELECT r.ctid, r.sequence FROM keyed CROSS JOIN LATERAL (
                SELECT q.ctid, q.sequence, q.identifier FROM {schema}.task AS q
                WHERE q.topic = $1 AND q.identifier >= keyed.identifier AND q.identifier <= keyed.identifier
                  AND q.state >= 1 AND q.state <= 1
                  AND coalesce(q.not_before, '-infinity') <= {now}
                ORDER BY q.identifier {direction}, q.state {direction}, q.sequence {direction}
                LIMIT greatest(0, (SELECT k FROM take) - ({activeOf:keyed}))) AS r
            WHERE NOT (SELECT walked FROM enough)
              AND EXISTS (SELECT FROM {schema}.task_owner WHERE owner = $2){condition}) AS c
        ORDER BY c.sequence {direction} LIMIT {take}))
        FOR UPDATE OF l{skip}`
	// keyedWith, after limitTake in the {with} of a keyed poll: the
	// identifiers (keyed), the walk (walked) and whether it was enough, which
	// keyedCandidates and the poll's marker read.
	//
	// The walk tells of each of its candidates whether its identifier has
	// fewer Active tasks and earlier due Ready ones than its limit (room),
	// and whether it was at its limit (at_limit). Only an identifier's first
	// k candidates in poll order (nth) are counted: a later one has k
	// earlier due Ready tasks among them, so no room, whatever the index
	// holds. The earlier ones are the candidate's rank (nth - 1) where the
	// walk covers them (covered): every task the ready branch reads in
	// sequence order before the last it took, when the due branch took all
	// the due ones; else, a count in the keyed index. Counting them there at
	// every poll read the entries of the consumed tasks (dead until a
	// vacuum) before each of a backlog's candidates: 3.5 ms a candidate in
	// the renderer of bench/, its polls 20 to 70 ms where they now take a
	// few. A poll's condition (singular) leaves each identifier at most
	// one candidate, with no earlier Ready task: its rank is exact too.
	//
	// Every read of the keyed index names its columns as ranges and orders
	// by them: with equalities, the planner took the identifier and state
	// for constants and read the primary key in sequence order instead,
	// through every consumed task before a quiet identifier's first Ready
	// one (4,800 rows a quiet identifier, a poll 20 ms). The loose scan
	// orders by the state too, for the same reason: the identifier index,
	// which it took otherwise, holds every consumed task. OFFSET 0 keeps
	// the counts in their level, read once by room and at_limit.
	keyedWith = `keyed (identifier) AS (
    (SELECT k.identifier FROM {schema}.task AS k
     WHERE k.topic = $1 AND k.state <= 1 ORDER BY k.identifier, k.state LIMIT 1)
    UNION ALL
    SELECT (SELECT k.identifier FROM {schema}.task AS k
            WHERE k.topic = $1 AND k.state <= 1 AND k.identifier > keyed.identifier
            ORDER BY k.identifier, k.state LIMIT 1)
    FROM keyed WHERE keyed.identifier IS NOT NULL),
walked AS MATERIALIZED (
    SELECT w.ctid, w.sequence, w.due, w.active + w.earlier < (SELECT k FROM take) AS room,
           w.active >= (SELECT k FROM take) AS at_limit
    FROM (
    SELECT r.ctid, r.sequence, r.due,
           CASE WHEN r.nth <= (SELECT k FROM take) THEN ({activeOf:r}) ELSE 0 END AS active,
           CASE WHEN r.nth > (SELECT k FROM take) THEN (SELECT k FROM take)
                WHEN r.covered THEN r.nth - 1
                ELSE (SELECT count(*) FROM (SELECT FROM {schema}.task AS e
                                            WHERE e.topic = $1 AND e.identifier >= r.identifier AND e.identifier <= r.identifier
                                              AND e.state >= 1 AND e.state <= 1 AND e.sequence {earlier} r.sequence
                                              AND coalesce(e.not_before, '-infinity') <= {now}
                                            ORDER BY e.identifier, e.state, e.sequence
                                            LIMIT (SELECT k FROM take)) AS e) END AS earlier
    FROM (
    SELECT r.*, row_number() OVER (PARTITION BY r.identifier ORDER BY r.sequence {direction}) AS nth,
           count(*) FILTER (WHERE r.due) OVER () < (SELECT n FROM take)
           AND (count(*) FILTER (WHERE NOT r.due) OVER () < (SELECT n FROM take)
                OR NOT ({last}(r.sequence) FILTER (WHERE NOT r.due) OVER () {earlier} r.sequence)) AS covered
    FROM (
        SELECT * FROM ({ready}) AS ready
        UNION ALL
        SELECT * FROM ({due}) AS due) AS r) AS r
    OFFSET 0) AS w),
enough (walked) AS (
    SELECT count(*) FILTER (WHERE room) >= (SELECT n FROM take)
           OR (count(*) FILTER (WHERE due) < (SELECT n FROM take)
               AND count(*) FILTER (WHERE NOT due) < (SELECT n FROM take))
    FROM walked),
`
	// limitHeld, {held} of a limited poll's marker: the Active limit left
	// the poll less room than it asked for, and the poll took all of it: the
	// topic is at its limit. keyedHeld adds, for a keyed poll, a candidate
	// whose identifier was at its limit (as far as the walk saw).
	limitHeld = `(SELECT n FROM take) < $3 AND (SELECT count(*) FROM polled) >= (SELECT n FROM take)`
	keyedHeld = limitHeld + ` OR EXISTS (SELECT FROM walked WHERE at_limit)`
	// keyedWalk is {ready} and {due} of keyedCandidates: a branch of a plain
	// poll ({which}, {order}, {due}) that locks nothing, with the
	// candidates' identifiers and whether they are due.
	keyedWalk = `
                SELECT r.ctid, r.sequence, r.identifier, {due} AS due FROM {schema}.task AS r
                WHERE r.topic = $1 AND r.state = 1 AND {which}
                  AND EXISTS (SELECT FROM {schema}.task_owner WHERE owner = $2){condition}
                ORDER BY {order} LIMIT {take}`
	// keyedActive is {activeOf:keyed} and {activeOf:r}: the Active tasks of
	// an identifier ({identifier}), at most its limit. "state < 1" is state
	// = 0 (no state is below), which the keyed index's predicate (state <=
	// 1) matches and the active index's (state = 0) does not: with fresh
	// statistics after a consumption the planner read the whole active index,
	// with the dead entries of every consumed task, for each identifier (18
	// pages each among 7,000), rather than the identifier's range.
	keyedActive = `SELECT count(*) FROM (SELECT FROM {schema}.task AS a
                                  WHERE a.topic = $1 AND a.identifier = {identifier} AND a.state < 1
                                  LIMIT (SELECT k FROM take)) AS a`
)

// limitFreed wakes the consumers of a topic with limits, in the
// transaction of a completion (see completing).
const limitFreed = `SELECT pg_notify($1, $2)`

// completing runs the completion statement of tasks of topic, on task or
// on the topic's partition (see onTopic). A completion in a topic that the
// repository found with limits frees room that consumers waiting at a
// limit, in any process, could not poll for: it notifies the topic on
// TasksChannel too, when it commits, so that they poll at once rather than
// after their pause.
func (r *Repository) completing(ctx context.Context, db DB, topic, statement string, onPartition partitioned, args []any) (pgconn.CommandTag, error) {
	_, limited := r.limited.Load(topic)
	var tag pgconn.CommandTag
	err := r.onTopic(db, topic, statement, onPartition, func(sql string, generic bool) error {
		steps := []step{{sql: sql, args: args, tag: &tag, generic: generic}}
		if limited {
			steps = append(steps, step{sql: limitFreed, args: []any{TasksChannel(r.plain), topic}, generic: true})
		}
		if len(steps) == 1 && !generic {
			var err error
			tag, err = exec(ctx, db, sql, args...)
			return err
		}
		return pipeline(ctx, db, steps...)
	})
	return tag, err
}

// SetLimits sets the limits of topic; zero Limits removes them. Setting the
// first limit of a topic, or removing its last, waits for the polls and
// pushes of the topic under way, and holds theirs back until the call's
// transaction ends: it changes the trigger of the topic's partition. So
// does setting or removing a limit per identifier, which builds or drops an
// index of the topic's Ready and Active tasks.
func (r *Repository) SetLimits(ctx context.Context, db DB, topic string, limits taskapi.Limits) error {
	if err := check.Limits(topic, limits); err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := exec(ctx, db, r.fleetSQL(limitsSet), topic, limits.Active, limits.PerIdentifier)
		if err == nil && tag.RowsAffected() == 0 {
			err = unregistered(topic)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	switch {
	case limits.PerIdentifier > 0:
		r.limited.Store(topic, keyedPoll)
	case limits.Active > 0:
		r.limited.Store(topic, limitedPoll)
	default:
		r.limited.Delete(topic)
	}
	return nil
}

// Limits returns the limits of every registered topic that has any.
func (r *Repository) Limits(ctx context.Context, db DB) (map[string]taskapi.Limits, error) {
	rows, _ := query(ctx, db, r.fleetSQL(limitsRows))
	all := map[string]taskapi.Limits{}
	var (
		topic  string
		limits taskapi.Limits
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &limits.Active, &limits.PerIdentifier}, func() error {
		all[topic] = limits
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "read limits")
	}
	return all, nil
}
