package taskansi

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/planner"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Regulator[DB] = (*Repository)(nil)

// The limits of a topic live in its row of task_topic, NULL for none
// (migrations: postgres 00011, sqlite 00010, mysql 00008). On PostgreSQL
// setting them is a plain UPDATE too: the schema's trigger adds or drops the
// trigger and index of the topic's partition that keep them, for taskpg and
// taskansi alike.
const (
	limitsSet  = `UPDATE {topic} SET active_limit = ?, identifier_limit = ? WHERE topic = ?`
	limitsRows = `
SELECT topic, COALESCE(active_limit, 0), COALESCE(identifier_limit, 0) FROM {topic}
WHERE active_limit IS NOT NULL OR identifier_limit IS NOT NULL`
)

// What a poll of a topic reads of its limits (see pollLimited). Every
// statement on the topic's Ready or Active tasks by identifier reads the
// index task_keyed (topic, state, identifier, sequence), partial WHERE
// state IN (0, 1) on SQLite, a key of its own on MySQL ({keyedIndex}); on
// PostgreSQL the partition of a topic with a limit per identifier has
// task_<md5>_keyed (identifier, state, sequence) WHERE state <= 1. The
// redundant "state IN (0, 1)" is SQLite's predicate word for word, without
// which SQLite does not see that the partial index serves; written as
// "state <= 1" it made SQLite 3.40 read the index by (topic, state < 2)
// alone, over every Ready task of the topic. The statements name the
// states, and the order, by tokens that PostgreSQL writes otherwise (see
// keyedTokens).
const (
	// limitsOf reads the limits of a topic by its primary key: the one
	// read that a poll of a topic without limits pays.
	limitsOf = `SELECT COALESCE(active_limit, 0), COALESCE(identifier_limit, 0) FROM {topic} WHERE topic = ?`
	// limitsHeld lists the identifiers of the topic's Active tasks, one row
	// per task: where the polls of the topic took turns, a read that sees
	// every poll committed before ({latest}: a locking read in a caller's
	// transaction on MySQL, whose snapshot may be older than the turn).
	limitsHeld = `SELECT identifier FROM {task}{keyedIndex} WHERE topic = ? AND {keyedActive}{latest}`
	// limitsKeys lists the identifiers of the topic's Ready tasks from the
	// argument on ({from}: >= for the first page, > after), at most the
	// last argument of them, one descent of the index each (a loose index
	// scan): its cost grows with the identifiers, not their tasks. Pages
	// keep the recursion below MySQL's cte_max_recursion_depth and
	// MariaDB's max_recursive_iterations (1000 by default).
	limitsKeys = `
WITH RECURSIVE keyed (identifier, n) AS (
    SELECT (SELECT k.identifier FROM {task} AS k
            WHERE k.topic = ? AND {keyedReady:k} AND k.identifier {from} ?
            ORDER BY k.identifier{stateAfter:k} LIMIT 1), 1
    UNION ALL
    SELECT (SELECT k.identifier FROM {task} AS k
            WHERE k.topic = ? AND {keyedReady:k} AND k.identifier > keyed.identifier
            ORDER BY k.identifier{stateAfter:k} LIMIT 1), keyed.n + 1
    FROM keyed WHERE keyed.identifier IS NOT NULL AND keyed.n < ?)
SELECT identifier FROM keyed WHERE identifier IS NOT NULL`
	// limitsGroups lists the same identifiers all at once where the
	// dialect reads GROUP BY on a prefix of an index by a loose index scan
	// (groupedKeys: MySQL, "Using index for group-by"), and would read the
	// correlated subquery of limitsKeys from the start of the topic's Ready
	// tasks at every step (MariaDB 10.11 did: 1680 entries a step over 2000
	// Ready tasks of 100 identifiers).
	limitsGroups = `
SELECT identifier FROM {task}{keyedIndex}
WHERE topic = ? AND state = 1
GROUP BY topic, state, identifier`
	// limitsBranch is one identifier's candidates: its earliest due Ready
	// tasks in poll order that meet the poll's condition, at most the last
	// argument, the room it has below its limit. A statement reads the
	// branches of many identifiers at once, joined by UNION ALL.
	limitsBranch = `
SELECT * FROM (SELECT r.sequence FROM {task} AS r{keyedIndex}
WHERE r.topic = ? AND {keyedReady:r} AND r.identifier = ?
  AND {due:r}
  AND EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = ?){condition}
ORDER BY {stateBefore:r}r.sequence {direction} LIMIT ?) AS c`
	// limitsUnion joins the branches ({branches}) and keeps the first of
	// their candidates in poll order, at most the poll's size.
	limitsUnion = `SELECT * FROM ({branches}) AS u ORDER BY sequence {direction} LIMIT ?`
	// pollMarked marks the candidates Active on PostgreSQL, where the
	// trigger of a limited topic's partition may leave some of them Ready:
	// the poll returns the tasks the update returns.
	pollMarked = pollMark + ` RETURNING sequence`
)

// keyedTokens returns the pairs of tokens and their text by which the
// statements of a poll under limits in direction name the keyed index's
// states and order: {keyedReady:k} and {keyedReady:r} (Ready tasks),
// {keyedActive} (Active ones), {stateAfter:k} and {stateBefore:r} (the
// state in the order of the loose scan and of a branch).
//
// Where the dialect reads keyed ranges (PostgreSQL), a Ready task is
// "state BETWEEN 1 AND 1" and the state is ordered on, as the keyed index
// (identifier, state, sequence) is: "state = 1" let the planner drop the
// state from the order, so that the identifier index (identifier,
// sequence), which holds the tasks that have finished too, served as well,
// and with statistics taken before a consumption it took that one, over
// 5,000 tasks consumed (6,500 pages each for the loose scan and the
// branches); no other index gives the order of a range of states. "state
// IN (0, 1)" is left out: on a column after the first it kept the index
// scan from returning its rows in order (PostgreSQL 15 and 16 scan each
// state apart), so the loose scan sorted every Ready task of the topic
// (1,336 pages without statistics). The Active tasks are "state = 0",
// which the active index serves.
func keyedTokens(d *dialect, direction string) []string {
	if !d.keyedRanges {
		return []string{"{keyedReady:k}", "k.state IN (0, 1) AND k.state = 1", "{keyedReady:r}", "r.state IN (0, 1) AND r.state = 1",
			"{keyedActive}", "state IN (0, 1) AND state = 0", "{stateAfter:k}", "", "{stateBefore:r}", ""}
	}
	return []string{"{keyedReady:k}", "k.state BETWEEN 1 AND 1", "{keyedReady:r}", "r.state BETWEEN 1 AND 1",
		"{keyedActive}", "state = 0", "{stateAfter:k}", ", k.state", "{stateBefore:r}", "r.state " + direction + ", "}
}

// The trust of migration 00011's trigger in a poll under limits on
// PostgreSQL (see countedLimits): the poll takes the topic's limit lock,
// which the trigger takes too (1952543598, the space of the limit locks
// of internal/lockkey, keyed by the schema and topic), and under READ
// COMMITTED tells the trigger that it counts both limits itself, as
// taskpg's polls do ('counted:2:<topic>'); in a caller's transaction,
// limitsRestored gives back the planner's settings (internal/planner) and
// ends the trust once the poll has claimed its tasks, in one statement.
const (
	limitCounted = `
SELECT pg_advisory_xact_lock(1952543598, hashtext(CAST(? AS text) || '.' || CAST(? AS text))),
       set_config('taskrepo.limited', CASE WHEN current_setting('transaction_isolation') = 'read committed'
                                           THEN 'counted:2:' || CAST(? AS text)
                                           ELSE coalesce(current_setting('taskrepo.limited', true), '') END, true)`
	limitsRestored = planner.Restored + `,
       CASE WHEN current_setting('taskrepo.limited', true) LIKE 'counted:%' THEN set_config('taskrepo.limited', '', true) END`
)

const (
	// keysPage is the most identifiers that a statement of limitsKeys reads.
	keysPage = 250
	// branchesPerStatement is the most branches of limitsBranch that one
	// statement joins: SQLite allows 500 terms in a compound SELECT.
	branchesPerStatement = 100
)

// SetLimits sets the limits of topic; zero Limits removes them. It runs in
// a transaction of its own (a savepoint inside a caller's), since on
// PostgreSQL it may change the trigger and indexes of the topic's
// partition, which waits for the polls and pushes of the topic under way: a
// failure there leaves a caller's transaction usable.
func (r *Repository) SetLimits(ctx context.Context, db DB, topic string, limits taskapi.Limits) error {
	if err := check.Limits(topic, limits); err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	err := r.retrying(ctx, db, func(db DB) error {
		return r.atomic(ctx, db, func(tx DB) error {
			n, err := affected(tx.ExecContext(ctx, r.fleetSQL(limitsSet),
				nullUnlessPositive(limits.Active), nullUnlessPositive(limits.PerIdentifier), topic))
			if err == nil && n == 0 {
				// MySQL counts the rows changed, not the rows found.
				err = r.mustBeKnown(ctx, tx, topic)
			}
			return err
		})
	})
	if err != nil {
		return wrapf(err, "set the limits of %q", topic)
	}
	return nil
}

// Limits returns the limits of every registered topic that has any.
func (r *Repository) Limits(ctx context.Context, db DB) (map[string]taskapi.Limits, error) {
	rows, err := db.QueryContext(ctx, r.fleetSQL(limitsRows))
	if err != nil {
		return nil, wrapf(err, "read limits")
	}
	all := map[string]taskapi.Limits{}
	err = forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic  string
			limits taskapi.Limits
		)
		err := scan(&topic, &limits.Active, &limits.PerIdentifier)
		all[topic] = limits
		return err
	})
	if err != nil {
		return nil, wrapf(err, "read limits")
	}
	return all, nil
}

// nullUnlessPositive returns n, or nil (NULL: no limit) for 0.
func nullUnlessPositive(n int64) any {
	if n > 0 {
		return n
	}
	return nil
}

// topicLimits reads the limits of topic in the poll's transaction: none
// when the topic is not registered.
func (r *Repository) topicLimits(ctx context.Context, tx DB, topic string) (taskapi.Limits, error) {
	var l taskapi.Limits
	err := tx.QueryRowContext(ctx, r.expand(r.q.limitsOf), topic).Scan(&l.Active, &l.PerIdentifier)
	if errors.Is(err, sql.ErrNoRows) {
		return taskapi.Limits{}, nil
	}
	return l, err
}

// plannedLimits turns bitmap scans and JIT off for the rest of a poll under
// limits in tx, the caller's transaction where caller is set, on a dialect
// with limitedPlans, and returns what gives a caller its settings back
// once the poll is done. The poll's reads of the keyed and active indexes,
// and the counts of the partition's trigger, are short ranges that end at
// a limit: a bitmap scan reads them whole and visits the row of every dead
// entry (those of consumed tasks, until a vacuum) at every poll, where an
// index scan marks them dead on its first visit and skips them afterwards.
// JIT is off as in taskpg's polls under limits, whose plans cost enough to
// be compiled, at far more than their run. In a caller's transaction
// restore also ends the trigger's trust (see countedLimits).
func (r *Repository) plannedLimits(ctx context.Context, tx DB, caller bool) (restore func() error, err error) {
	restore = func() error { return nil }
	switch {
	case !r.dialect.limitedPlans:
		return restore, nil
	case !caller:
		_, err = tx.ExecContext(ctx, planner.Off)
		return restore, err
	}
	restore = func() error {
		_, err := tx.ExecContext(ctx, limitsRestored)
		return err
	}
	_, err = tx.ExecContext(ctx, planner.OffSaved)
	return restore, err
}

// countedLimits takes the limit lock of topic in tx and returns its
// limits read again once the lock is held, on a dialect with limitedPlans
// and a repository that names its schema (the lock's key); elsewhere it
// returns limits. Every claim of the topic takes the lock, the trigger's
// as well, so under READ COMMITTED the poll's statements that follow see
// every claim committed before, and the counts of pollLimited are exact:
// the trigger need not count again, row by row. Its counts cost more than
// the rest of a poll of 5 beside 100,000 Ready tasks of one identifier
// (the planning of three statements for each row claimed: 173 of the 362
// pages without statistics, where an unlimited poll touches 117 in all).
// Under REPEATABLE READ or SERIALIZABLE (a caller's transaction) the
// statements see the transaction's snapshot, and the trigger counts.
func (r *Repository) countedLimits(ctx context.Context, tx DB, topic string, limits taskapi.Limits) (taskapi.Limits, error) {
	if !r.dialect.limitedPlans || r.plain == "" {
		return limits, nil
	}
	if _, err := tx.ExecContext(ctx, r.dialect.bind(limitCounted), r.plain, topic, topic); err != nil {
		return limits, err
	}
	return r.topicLimits(ctx, tx, topic)
}

// pollLimited polls a topic with limits, once the polls of the topic take
// turns (see poll): it counts the topic's Active tasks by identifier, takes
// no more than the Active limit leaves room for, and under a limit per
// identifier picks the candidates by identifier (see pollKeyed). On
// PostgreSQL the trigger of the topic's partition keeps the limits exactly
// whatever the counts found; elsewhere the turns and counts keep them.
func (r *Repository) pollLimited(ctx context.Context, tx DB, topic string, size int, p check.Polling, blocking []any, limits taskapi.Limits, points bool) ([]taskapi.Task, error) {
	latest := 0
	if points {
		latest = 1
	}
	held, err := queryStrings(ctx, tx, r.expand(r.q.limitsHeld[latest]), topic)
	if err != nil {
		return nil, err
	}
	room := size
	if limits.Active > 0 {
		room = int(max(0, min(int64(size), limits.Active-int64(len(held)))))
	}
	var tasks []taskapi.Task
	passedOver := false // a Ready task of an identifier at its limit
	switch {
	case room == 0:
	case limits.PerIdentifier == 0:
		tasks, err = r.pollPlain(ctx, tx, topic, room, p.Order, blocking, points)
	default:
		rooms := map[string]int64{}
		for _, identifier := range held {
			rooms[identifier]--
		}
		tasks, passedOver, err = r.pollKeyed(ctx, tx, topic, room, p.Order, blocking, limits.PerIdentifier, rooms)
	}
	if p.Note != nil && err == nil {
		p.Note.Held = passedOver || (room < size && len(tasks) >= room)
	}
	return tasks, err
}

// pollKeyed polls a topic with a limit per identifier: of each identifier
// with a Ready task (see limitsKeys) and room below its limit (perKey plus
// rooms, which holds minus its Active tasks), its earliest due Ready tasks
// in poll order, as many as it has room for; of those the first size in
// poll order, which it locks by points, skipping those that others locked
// or took meanwhile. The tasks of identifiers at their limit are never
// read, however many; passedOver says whether there was such an identifier.
func (r *Repository) pollKeyed(ctx context.Context, tx DB, topic string, size int, order taskapi.Order, blocking []any, perKey int64, rooms map[string]int64) (tasks []taskapi.Task, passedOver bool, err error) {
	conditional := min(len(blocking), 1)
	// The branches are bound together, so that PostgreSQL numbers the
	// placeholders of the whole statement.
	branch := strings.ReplaceAll(r.q.limitsBranch[order][conditional], "{list}", marks(len(blocking)))
	var candidates, branchArgs []any
	var branches []string
	flush := func() error {
		if len(branches) == 0 {
			return nil
		}
		query := r.expand(r.q.limitsUnion[order], "{branches}", strings.Join(branches, " UNION ALL "))
		found, err := querySequences(ctx, tx, query, append(branchArgs, size)...)
		candidates, branches, branchArgs = appendArgs(candidates, found...), nil, nil
		return err
	}
	err = r.forEachKey(ctx, tx, topic, func(identifier string) error {
		room := perKey + rooms[identifier]
		if room <= 0 {
			passedOver = true
			return nil
		}
		branches = append(branches, branch)
		branchArgs = append(branchArgs, r.args(slices.Concat([]any{topic, identifier, now{}, r.owner}, blocking, []any{room})...)...)
		if len(branches) < branchesPerStatement {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	if err != nil || len(candidates) == 0 {
		return nil, passedOver, err
	}
	tasks, err = r.lockCandidates(ctx, tx, topic, size, order, candidates)
	return tasks, passedOver, err
}

// forEachKey calls fn with each identifier of the topic's Ready tasks: a
// page of limitsKeys at a time, or where the dialect groups by a loose
// index scan all of limitsGroups.
func (r *Repository) forEachKey(ctx context.Context, tx DB, topic string, fn func(identifier string) error) error {
	if r.dialect.groupedKeys {
		keys, err := queryStrings(ctx, tx, r.expand(r.q.limitsGroups), topic)
		if err != nil {
			return err
		}
		return eachKey(keys, fn)
	}
	from, next := 0, ""
	for {
		keys, err := queryStrings(ctx, tx, r.expand(r.q.limitsKeys[from]), topic, next, topic, keysPage)
		if err == nil {
			err = eachKey(keys, fn)
		}
		if err != nil || len(keys) < keysPage {
			return err
		}
		from, next = 1, keys[len(keys)-1]
	}
}

// eachKey calls fn with each of keys until it fails.
func eachKey(keys []string, fn func(identifier string) error) error {
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// lockCandidates locks the first size of candidates (sequences) in poll
// order that are still Ready and due, by points, and returns them.
func (r *Repository) lockCandidates(ctx context.Context, tx DB, topic string, size int, order taskapi.Order, candidates []any) ([]taskapi.Task, error) {
	slices.SortFunc(candidates, func(a, b any) int {
		if order == taskapi.LIFO {
			a, b = b, a
		}
		return cmp.Compare(a.(int64), b.(int64))
	})
	candidates = candidates[:min(len(candidates), size)]
	query := r.expand(r.q.pollPoints[order], "{list}", marks(len(candidates)))
	return queryTasks(ctx, tx, query, r.args(slices.Concat([]any{topic}, candidates, []any{now{}})...)...)
}

// freed wakes the consumers of topic waiting at its limits, in the
// transaction of a completion that frees room: on PostgreSQL, when the
// repository's last poll of the topic found limits, it notifies the topic
// on taskpg.TasksChannel, delivered when the completion commits, as
// taskpg's completions do. The other dialects have no channel: their
// consumers poll after their pause.
func (r *Repository) freed(ctx context.Context, tx DB, topic string) error {
	if _, limited := r.limited.Load(topic); !limited || !r.dialect.partitioned {
		return nil
	}
	_, err := tx.ExecContext(ctx, r.expand(r.wake.freed), topic)
	return err
}
