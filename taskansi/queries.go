package taskansi

import (
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The SQL of every call, written once for all dialects. New substitutes the
// tokens in braces: {task}, {topic} and {owner} by the (qualified) tables, and
// the dialect's fragments ({now}, {ago}, {greatest}, {lock}, {wait}, {share},
// {insert}, {ignore}; see dialect). The tokens that remain are filled per
// call with placeholders: {list} and {states} (?, ?, ...), {ranges}
// (sequence BETWEEN ? AND ? OR ...), {rows} ((?, ?, ?, ?, ?), ...), and
// {filters} and {topicFilter} (the conditions of the filters that are not
// empty). Values are always parameters.
//
// Statements that change rows they read lock them first: every change that
// depends on what was read runs in a transaction of its own (a savepoint
// inside a caller's transaction; see atomic), whose first statement takes the
// write lock on SQLite. SET lists raise descent before they change state,
// since MySQL assigns from left to right with the new values.

// Push: the topic is locked against a concurrent Destroy while the push runs.
const (
	pushTopic = `SELECT topic FROM {topic} WHERE topic = ?{share}`
	// The older tasks that an insertion mode changes: $2.. identifiers, then
	// the range of states.
	pushOlder = `
SELECT sequence FROM {task}
WHERE topic = ? AND identifier IN ({list}) AND state BETWEEN ? AND ?
ORDER BY sequence{lock}`
	pushRedundant = `UPDATE {task} SET descent = {greatest}(state, descent), state = 8 WHERE topic = ? AND sequence IN ({list})`
	pushDelete    = `DELETE FROM {task} WHERE topic = ? AND sequence IN ({list})`
	pushInsert    = `INSERT INTO {task} (topic, identifier, state, reference, input) VALUES {rows}{returning}`
	pushRow       = `(?, ?, ?, ?, ?)`
)

// Poll selects and locks the candidates, then marks them. The owner check is
// folded in; only when nothing comes back does Poll look whether the owner
// exists. The conditions skip a candidate while its identifier has an
// earlier Ready task (in poll order) or a task in a blocking state.
const (
	pollCandidates = `
SELECT r.sequence, r.identifier, COALESCE(r.input, '') FROM {task} AS r
WHERE r.topic = ? AND r.state = 1
  AND EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = ?){condition}
ORDER BY r.sequence {direction} LIMIT ?{lock}`
	// "state + 0" keeps the conditions off the partial indexes on state,
	// so that they probe the identifier index task by task; see taskpg's
	// pollSingular for what the planner did otherwise.
	pollSingular = `
  AND NOT EXISTS (SELECT 1 FROM {task} AS e
                  WHERE e.topic = r.topic AND e.identifier = r.identifier
                    AND e.state + 0 = 1 AND e.sequence {earlier} r.sequence)
  AND NOT EXISTS (SELECT 1 FROM {task} AS b
                  WHERE b.topic = r.topic AND b.identifier = r.identifier
                    AND b.state + 0 IN ({list}))`
	pollMark    = `UPDATE {task} SET state = 0, owner = ? WHERE topic = ? AND sequence IN ({list})`
	ownerExists = `SELECT COUNT(*) FROM {owner} WHERE owner = ?`
)

// Complete, ReviveTasks and Reassign name tasks by ranges of sequences. They
// lock the matching rows first and write only when every named task matched.
const (
	completeLock = `SELECT sequence FROM {task} WHERE topic = ? AND state = 0 AND owner = ? AND ({ranges}){wait}`
	completeSet  = `
UPDATE {task} SET state = ?, output = ?, completed = {now}
WHERE topic = ? AND ({ranges})`
	revivedColumns = `sequence, identifier, COALESCE(input, ''), COALESCE(reference, '')`
	reviveLock     = `
SELECT ` + revivedColumns + ` FROM {task}
WHERE topic = ? AND state BETWEEN 2 AND 6 AND ({ranges}){wait}`
	reviveSpan = `
SELECT ` + revivedColumns + ` FROM {task}
WHERE topic = ? AND state = ? AND sequence BETWEEN ? AND ?
ORDER BY sequence LIMIT ?{lock}`
	revivalReset    = `UPDATE {task} SET descent = {greatest}(state, descent), state = 1, owner = NULL, output = NULL, completed = NULL WHERE topic = ? AND ({ranges})`
	revivalRecreate = `UPDATE {task} SET descent = {greatest}(state, descent), state = 7 WHERE topic = ? AND ({ranges})`
	reassignLock    = `SELECT sequence FROM {task} WHERE topic = ? AND state BETWEEN 2 AND 6 AND ({ranges}){wait}`
	reassignSet     = `
UPDATE {task} SET descent = {greatest}(state, descent), state = ?, completed = COALESCE(completed, {now})
WHERE topic = ? AND state <> ? AND ({ranges})`
	reassignAll = `
UPDATE {task} SET descent = {greatest}(state, descent), state = ?, completed = COALESCE(completed, {now})
WHERE topic = ? AND state = ? AND sequence BETWEEN ? AND ?`
)

// Join releases one group: it counts the group's identifiers that have a
// task in a state that makes them present ($3..), and releases the group's
// Suspended tasks when all have.
const (
	joinPresent = `
SELECT COUNT(DISTINCT identifier) FROM {task}
WHERE topic = ? AND identifier IN ({list}) AND state IN ({states})`
	joinRelease = `UPDATE {task} SET state = 1 WHERE topic = ? AND state = 4 AND identifier IN ({list})`
)

// Owners. Durations are parameters in microseconds. A row locked by its
// owner's transaction belongs to a live owner, so expiry skips it.
const (
	register   = `{insert} {owner} (owner) VALUES (?){ignore}`
	heartbeat  = `UPDATE {owner} SET heartbeat = {now} WHERE owner = ?`
	owners     = `SELECT owner FROM {owner} WHERE owner <> ? AND heartbeat > {ago}`
	expireLock = `
SELECT a.topic, a.sequence FROM {task} AS a
WHERE a.state = 0 AND a.owner <> ?
  AND NOT EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = a.owner AND o.heartbeat >= {ago})
ORDER BY a.sequence{lock}`
	expireSet   = `UPDATE {task} SET state = 2 WHERE topic = ? AND state = 0 AND sequence IN ({list})`
	purgeOwners = `
DELETE FROM {owner}
WHERE owner <> ? AND heartbeat < {ago}
  AND NOT EXISTS (SELECT 1 FROM {task} AS t WHERE t.state = 0 AND t.owner = task_owner.owner)`
)

// Topics. Deleting a topic deletes its tasks by the schema's own means (a
// partition dropped, a trigger, a foreign key).
const (
	initialize = `{insert} {topic} (topic) VALUES (?){ignore}`
	topics     = `SELECT topic FROM {topic}`
	destroy    = `DELETE FROM {topic} WHERE topic = ?`
	purgeAll   = `DELETE FROM {task} WHERE topic = ?`
	purge      = `DELETE FROM {task} WHERE topic = ? AND sequence BETWEEN ? AND ? AND state IN ({list})`
)

// Reads. {filters} holds the conditions of the filters that are not empty.
const (
	infoColumns = `sequence, identifier, COALESCE(input, ''), state, descent, COALESCE(owner, ''),
       COALESCE(reference, ''), COALESCE(output, ''), created, completed`
	page = `
SELECT ` + infoColumns + ` FROM {task}
WHERE topic = ? AND sequence {beyond} ?{filters}
ORDER BY sequence {direction} LIMIT ?`
	lookup = `SELECT ` + infoColumns + ` FROM {task} WHERE topic = ? AND sequence = ?`
	// count lists every registered topic that passes the topic filter, with
	// the summary of each state that has tasks.
	count = `
SELECT p.topic, c.state, c.n, c.bound
FROM {topic} AS p
LEFT JOIN (
    SELECT topic, state, COUNT(*) AS n, MAX(sequence) AS bound
    FROM ({candidates}) AS k
    WHERE 1 = 1{states}
    GROUP BY topic, state) AS c ON c.topic = p.topic
WHERE 1 = 1{topicFilter}`
	countTotal = `SELECT topic, state, sequence FROM {task} WHERE sequence BETWEEN ? AND ?{filters}`
	// Recent keeps the highest sequence of each identifier among the
	// candidates before the state filter applies.
	countRecent = `
SELECT topic, state, sequence FROM (
    SELECT topic, state, sequence,
           ROW_NUMBER() OVER (PARTITION BY topic, identifier ORDER BY sequence DESC) AS recency
    FROM {task} WHERE sequence BETWEEN ? AND ?{filters}) AS w
WHERE recency = 1`
	// A task pushed Suspended has no completion time and is not counted.
	results = `
SELECT p.topic, c.state, c.n
FROM {topic} AS p
LEFT JOIN (
    SELECT topic, state, COUNT(*) AS n FROM {task}
    WHERE state BETWEEN 3 AND 6 AND completed BETWEEN ? AND ?
    GROUP BY topic, state) AS c ON c.topic = p.topic`
	resolveFollowing = `SELECT MIN(sequence) FROM {task} WHERE created >= ?`
	resolvePreceding = `SELECT MAX(sequence) FROM {task} WHERE created <= ?`
)

// queries holds the SQL of a repository, its dialect's tokens substituted.
type queries struct {
	pushTopic, pushOlder, pushInsert             string
	pushDelete, pushRedundant                    string
	poll                                         [2][2]string // by Order, then unconditional / conditional
	pollMark, pollLock, ownerExists              string
	completeLock, completeSet                    string
	reviveLock, reviveSpan                       string
	revivalReset, revivalRecreate                string
	reassignLock, reassignSet, reassignAll       string
	joinPresent, joinRelease                     string
	register, heartbeat, owners, expireLock      string
	expireSet, purgeOwners                       string
	initialize, topics, destroy, purgeAll, purge string
	refresh, writeLock, lookup                   string
	page                                         [2]string // by Direction
	count                                        [2]string // by Snapshot
	results, resolveFollowing, resolvePreceding  string
}

// newQueries returns the queries of d on the tables of schema (quoted; empty
// for the connection's own), skipping locked rows unless exclusive.
func newQueries(d *dialect, schema string, exclusive bool) queries {
	qualify := func(table string) string {
		if schema == "" {
			return table
		}
		return schema + "." + d.quoteIdentifier(table)
	}
	lock := d.forUpdate
	if lock != "" && !exclusive {
		lock += " SKIP LOCKED"
	}
	returning := ""
	if d.returning {
		returning = " RETURNING sequence"
	}
	sub := strings.NewReplacer(
		"{task}", qualify("task"), "{topic}", qualify("task_topic"), "{owner}", qualify("task_owner"),
		"{now}", d.now, "{ago}", d.ago, "{greatest}", d.greatest, "{lock}", lock, "{wait}", d.forUpdate,
		"{share}", d.share, "{insert}", d.insert, "{ignore}", d.ignore, "{returning}", returning,
	).Replace
	v := func(template string, pairs ...string) string {
		return sub(strings.NewReplacer(pairs...).Replace(template))
	}
	var q queries
	q.pushTopic, q.pushOlder, q.pushInsert = sub(pushTopic), sub(pushOlder), sub(pushInsert)
	q.pushDelete, q.pushRedundant = sub(pushDelete), sub(pushRedundant)
	for _, o := range []struct {
		order              taskapi.Order
		direction, earlier string
	}{{taskapi.FIFO, "ASC", "<"}, {taskapi.LIFO, "DESC", ">"}} {
		singular := strings.ReplaceAll(pollSingular, "{earlier}", o.earlier)
		q.poll[o.order][0] = v(pollCandidates, "{condition}", "", "{direction}", o.direction)
		q.poll[o.order][1] = v(pollCandidates, "{condition}", singular, "{direction}", o.direction)
	}
	q.pollMark, q.pollLock, q.ownerExists = sub(pollMark), sub(d.pollLock), sub(ownerExists)
	q.completeLock, q.completeSet = sub(completeLock), sub(completeSet)
	q.reviveLock, q.reviveSpan = sub(reviveLock), sub(reviveSpan)
	q.revivalReset, q.revivalRecreate = sub(revivalReset), sub(revivalRecreate)
	q.reassignLock, q.reassignSet, q.reassignAll = sub(reassignLock), sub(reassignSet), sub(reassignAll)
	q.joinPresent, q.joinRelease = sub(joinPresent), sub(joinRelease)
	q.register, q.heartbeat, q.owners, q.expireLock = sub(register), sub(heartbeat), sub(owners), sub(expireLock)
	q.expireSet, q.purgeOwners = sub(expireSet), sub(purgeOwners)
	q.initialize, q.topics, q.destroy, q.purgeAll, q.purge = sub(initialize), sub(topics), sub(destroy), sub(purgeAll), sub(purge)
	q.refresh, q.writeLock, q.lookup = sub(d.refresh), sub(d.writeLock), sub(lookup)
	q.page[taskapi.Forward] = v(page, "{beyond}", ">", "{direction}", "ASC")
	q.page[taskapi.Backward] = v(page, "{beyond}", "<", "{direction}", "DESC")
	q.count[taskapi.Total] = v(count, "{candidates}", countTotal)
	q.count[taskapi.Recent] = v(count, "{candidates}", countRecent)
	q.results, q.resolveFollowing, q.resolvePreceding = sub(results), sub(resolveFollowing), sub(resolvePreceding)
	return q
}
