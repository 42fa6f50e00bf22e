package taskansi

import (
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The SQL of every call, written once for all dialects. New substitutes the
// tokens in braces: {task}, {topic}, {owner}, {hold}, {lock}, {schedule},
// {analyze} and {admit} by the (qualified) tables and functions, and the dialect's fragments
// ({now}, {ago}, {greatest}, {skip}, {wait}, {keep}, {primary}, {dueIndex}, {keyedIndex},
// {due:r}, {insert}, {ignore}; see dialect, and keyedTokens). The tokens that remain are filled per
// call with placeholders: {list}, {states} and {owners} (?, ?, ...),
// {ranges} (sequence BETWEEN ? AND ? OR ..., or sequence IN (...) where the
// dialect locks by points), {rows} ((?, ?, ?, ?, ?, ?, ?, ?), ...), {values}
// ((?), (?), ...), and {filters} and {topicFilter} (the conditions of the
// filters that are not empty; on PostgreSQL {topicFilter} names the few
// dozen topics that a statement spanning topics reads, see span.go).
// Values are always parameters; an argument list holds now and ago where the
// SQL has {now} and {ago} (see clock.go).
//
// Statements that name tasks by sequence read the primary key ({primary},
// {deleteFrom}): MySQL's planner would rather scan a small table whole, and
// under REPEATABLE READ lock every row and gap it passed.
//
// Statements that change rows they read lock them first: every change that
// depends on what was read runs in a transaction of its own (a savepoint
// inside a caller's transaction; see atomic), whose first statement takes the
// write lock on SQLite. SET lists raise descent before they change state,
// since MySQL assigns from left to right with the new values.

// Push: the topic's row is kept from changing while the push runs: a
// concurrent Destroy waits, and so does a change of the capacity that the
// statement reads (see capacity.go).
const (
	pushTopic = `SELECT capacity, identifier_capacity FROM {topic} WHERE topic = ?{keep}`
	// The older tasks that an insertion mode changes: $2.. identifiers, then
	// the range of states. pushOlderRead finds them without locking, for a
	// locking read by points (see pointLocks).
	pushOlder = `
SELECT sequence FROM {task}
WHERE topic = ? AND identifier IN ({list}) AND state BETWEEN ? AND ?
ORDER BY sequence{skip}`
	pushOlderRead = `
SELECT sequence FROM {task} WHERE topic = ? AND identifier IN ({list}) AND state BETWEEN ? AND ?`
	pushOlderPoints = `
SELECT sequence FROM {task}{primary}
WHERE topic = ? AND sequence IN ({list}) AND state BETWEEN ? AND ?
ORDER BY sequence{skip}`
	pushRedundant = `UPDATE {task}{primary} SET descent = {greatest}(state, descent), state = 8 WHERE topic = ? AND sequence IN ({list})`
	pushDelete    = `DELETE {deleteFrom} WHERE topic = ? AND sequence IN ({list})`
	pushInsert    = `INSERT INTO {task} (topic, identifier, state, reference, input, created, not_before, revivals) VALUES {rows}{returning}`
	pushRow       = `(?, ?, ?, ?, ?, {now}, ?, ?)`
)

// Locks by which pushes of identifiers (Replace, Supersede, Delete) and
// conditional polls of a topic take turns, with the keys of
// internal/lockkey, which taskpg shares. On PostgreSQL, advisory locks held
// until the transaction ends: a push of a few identifiers takes its topic's
// insertion lock shared and each identifier's lock, a larger one the topic's
// insertion lock alone. On MySQL, rows of task_lock, picked by the keys.
const (
	advisoryShared      = `SELECT pg_advisory_xact_lock_shared(CAST(? AS integer), CAST(? AS integer))`
	advisoryExclusive   = `SELECT pg_advisory_xact_lock(CAST(? AS integer), CAST(? AS integer))`
	advisoryIdentifiers = `
SELECT count(pg_advisory_xact_lock(CAST(? AS integer), k)) FROM (SELECT k FROM (VALUES {values}) AS v (k) ORDER BY k) AS s`
	advisoryPolls = `SELECT pg_advisory_xact_lock(1952543595, hashtext(?))` // taskpg's key
	lockBuckets   = `SELECT bucket FROM {lock} WHERE bucket IN ({list}) ORDER BY bucket FOR UPDATE`
)

// Poll selects and locks the candidates, then marks them. The owner check is
// folded in; only when nothing comes back does Poll look whether the owner
// exists. The conditions skip a candidate while its identifier has an
// earlier Ready task (in poll order), deferred or not, or a task in a
// blocking state ({list}: check.Polling.Blocking, Active plus the
// condition's Blocking states, and Expired for a poll that awaits
// revival). On PostgreSQL a poll that took tasks records that its owner
// holds tasks in the topic.
//
// The candidates come from two branches, each on an index of its own, so
// that a poll never walks over the tasks that wait for their time, however
// many: the tasks that were never deferred in sequence order (pollReady,
// which matches the predicate of the partial index task_ready exactly), and
// the deferred ones that are due in the order of their times, up to now
// (pollDue: task_deferred; on MySQL both read task_due). Each branch locks up
// to size candidates; the poll takes the first size of both in poll order.
// The rows that a branch locked and the poll did not take stay locked, and
// skipped by concurrent polls, until the poll's transaction ends: at most
// size more rows.
//
// Where the dialect locks by points, a poll in a caller's transaction reads
// the candidates of both branches without locks (pollRead, from the
// sequence after the last candidate tried) and locks them by points
// (pollPoints), checking again that they are Ready and due.
const (
	pollCandidates = `
SELECT * FROM ({ready}) AS a
UNION ALL
SELECT * FROM ({due}) AS b
ORDER BY sequence {direction} LIMIT ?`
	// pollBranch is a branch of the candidates: {which} and {order} pick its
	// tasks and their order. A branch of a poll returns {columns} and locks
	// its rows ({locking}); one of pollRead returns sequences from beyond
	// the cursor ({cursor}), without locks.
	pollBranch = `
SELECT {columns} FROM {task} AS r{dueIndex}
WHERE r.topic = ? AND r.state = 1 AND {which}{cursor}
  AND EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = ?){condition}
ORDER BY {order} LIMIT ?{locking}`
	pollColumns    = `r.sequence, r.identifier, COALESCE(r.input, '') AS input`
	pollCursor     = ` AND r.sequence {beyond} ?`
	pollReady      = `r.not_before IS NULL`
	pollReadyOrder = `r.sequence {direction}`
	pollDue        = `r.not_before IS NOT NULL AND r.not_before <= {now}`
	pollDueOrder   = `r.not_before {direction}, r.sequence {direction}`
	pollPoints     = `
SELECT sequence, identifier, COALESCE(input, '') FROM {task}{primary}
WHERE topic = ? AND sequence IN ({list}) AND state = 1 AND (not_before IS NULL OR not_before <= {now})
ORDER BY sequence {direction}{skip}`
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
	pollMark    = `UPDATE {task}{primary} SET state = 0, owner = ? WHERE topic = ? AND sequence IN ({list})`
	pollHold    = `INSERT INTO {hold} (owner, topic) VALUES (?, ?) ON CONFLICT DO NOTHING`
	ownerExists = `SELECT COUNT(*) FROM {owner} WHERE owner = ?`
)

// Complete, ReviveTasks, Reassign and Defer name tasks by sequence. They lock
// the matching rows first, reading the primary key, and write only when
// every named task matched. ReviveReset counts the revival on the row and
// clears its time; a recreating revival gives the new task the count plus
// one (see revive).
const (
	completeLock = `SELECT sequence FROM {task}{primary} WHERE topic = ? AND state = 0 AND owner = ? AND ({ranges}){wait}`
	completeSet  = `
UPDATE {task}{primary} SET state = ?, output = ?, completed = {now}
WHERE topic = ? AND ({ranges})`
	releaseSet     = `UPDATE {task}{primary} SET state = 1, owner = NULL WHERE topic = ? AND ({ranges})`
	revivedColumns = `sequence, identifier, COALESCE(input, ''), COALESCE(reference, ''), revivals`
	reviveLock     = `
SELECT ` + revivedColumns + ` FROM {task}{primary}
WHERE topic = ? AND state BETWEEN 2 AND 6 AND ({ranges}){wait}`
	reviveSpan = `
SELECT ` + revivedColumns + ` FROM {task}
WHERE topic = ? AND state = ? AND sequence BETWEEN ? AND ? AND ` + settled + `
ORDER BY sequence LIMIT ?{skip}`
	revivalReset = `
UPDATE {task}{primary} SET descent = {greatest}(state, descent), state = 1, owner = NULL, completed = NULL,
       not_before = NULL, revivals = revivals + 1
WHERE topic = ? AND ({ranges})`
	revivalRecreate = `UPDATE {task}{primary} SET descent = {greatest}(state, descent), state = 7 WHERE topic = ? AND ({ranges})`
	reassignLock    = `SELECT sequence FROM {task}{primary} WHERE topic = ? AND state BETWEEN 2 AND 6 AND ({ranges}){wait}`
	reassignSet     = `
UPDATE {task}{primary} SET descent = {greatest}(state, descent), state = ?, completed = COALESCE(completed, {now})
WHERE topic = ? AND state <> ? AND ({ranges})`
	// reassignOutput gives reassigned tasks the output of their assignment,
	// when it is not empty, whatever their state was.
	reassignOutput = `UPDATE {task}{primary} SET output = ? WHERE topic = ? AND ({ranges})`
	reassignAll    = `
UPDATE {task} SET descent = {greatest}(state, descent), state = ?, completed = COALESCE(completed, {now})
WHERE topic = ? AND state = ? AND sequence BETWEEN ? AND ? AND ` + settled
	// settled bounds ReviveCompletedBy, ReassignCompletedBy and PurgeCompletedBy by
	// completion time (the latest time for none): a task completed later is
	// left out, one never completed is not (see taskapi.CompletionBounded).
	settled   = `(completed IS NULL OR completed <= ?)`
	deferLock = `SELECT sequence FROM {task}{primary} WHERE topic = ? AND state = 1 AND ({ranges}){wait}`
	deferSet  = `UPDATE {task}{primary} SET not_before = ? WHERE topic = ? AND ({ranges})`
)

// NextDue: the earliest time of the topic's deferred Ready tasks that are
// not yet due, none when no task waits. The conditions match the predicate
// of task_deferred, whose second column after the topic is the time, so
// that the statement reads the first entry after now: one descent of the
// index, whatever the number of tasks that wait. It is MIN(not_before)
// written as ORDER BY ... LIMIT 1, which keeps PostgreSQL without
// statistics from aggregating every entry after now (it takes the two for
// equally cheap). On MySQL task_due leads with (topic, state, not_before),
// which serves it the same way; {dueIndex} keeps the planner on it.
const nextDue = `
SELECT not_before FROM {task}{dueIndex}
WHERE topic = ? AND state = 1 AND not_before IS NOT NULL AND not_before > {now}
ORDER BY not_before LIMIT 1`

// Schedules (Mark and Advance) keep their marks in the task_schedule table. A
// mark moves by compare-and-set: the first one is inserted unless the row
// exists (scheduleStart), a later one replaces the mark that the caller read
// (scheduleMove, the last argument). An UPDATE that waited for the row lock
// of a concurrent one evaluates its WHERE again on the version that
// committed (PostgreSQL under READ COMMITTED, InnoDB always), and SQLite has
// one writer, so that of several advances from one mark one changes the
// row and the others change nothing. The new mark always differs from the
// old, so that MySQL, which counts only the rows a statement changed, counts
// the row that matched. Destroy deletes a topic's marks (destroyMarks).
const (
	scheduleMark  = `SELECT mark FROM {schedule} WHERE topic = ? AND name = ?`
	scheduleStart = `{insert} {schedule} (topic, name, mark) VALUES (?, ?, ?){ignore}`
	scheduleMove  = `UPDATE {schedule} SET mark = ? WHERE topic = ? AND name = ? AND mark = ?`
)

// Join releases one group: it counts the group's identifiers that have a
// task in a state that makes them present ($3..), and releases the group's
// Suspended tasks when all have. A released task keeps nothing of its
// suspension: no owner, output or completion time.
const (
	joinPresent = `
SELECT COUNT(DISTINCT identifier) FROM {task}
WHERE topic = ? AND identifier IN ({list}) AND state IN ({states})`
	joinRelease = `
UPDATE {task} SET state = 1, owner = NULL, output = NULL, completed = NULL
WHERE topic = ? AND state = 4 AND identifier IN ({list})`
)

// Owners. A row locked by its owner's transaction belongs to a live owner,
// so expiry skips it.
const (
	register         = `{insert} {owner} (owner, heartbeat, incarnation) VALUES (?, {now}, ?){ignore}`
	reregister       = `UPDATE {owner} SET heartbeat = {now}, incarnation = ? WHERE owner = ?`
	priorIncarnation = `SELECT COALESCE(incarnation, '') FROM {owner} WHERE owner = ?`
	heartbeat        = `UPDATE {owner} SET heartbeat = {now} WHERE owner = ?`
	owners           = `SELECT owner FROM {owner} WHERE owner <> ? AND heartbeat >= {ago}`
	expireLock       = `
SELECT a.topic, a.sequence FROM {task} AS a
WHERE a.state = 0 AND a.owner <> ?
  AND NOT EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = a.owner AND o.heartbeat >= {ago}){topicFilter}
ORDER BY a.sequence{skip}`
	expireOwnLock = `SELECT a.topic, a.sequence FROM {task} AS a WHERE a.state = 0 AND a.owner = ?{topicFilter} ORDER BY a.sequence{wait}`
	expireSet     = `UPDATE {task}{primary} SET state = 2 WHERE topic = ? AND state = 0 AND sequence IN ({list})`
	purgeOwners   = `
DELETE FROM {owner}
WHERE owner <> ? AND heartbeat < {ago}
  AND NOT EXISTS (SELECT 1 FROM {task} AS t WHERE t.state = 0 AND t.owner = {owner}.owner)`
	// On PostgreSQL, where polls record holds: the topics in which owners
	// other than $1 that are silent (or not registered) may hold Active
	// tasks, the topics that an owner holds, the silent owners with their
	// topics, which of those hold Active tasks, and the deletion of the
	// others with their holds.
	silentHolds = `
SELECT h.owner, h.topic FROM {hold} AS h
WHERE h.owner <> ? AND NOT EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = h.owner AND o.heartbeat >= {ago})`
	ownHolds     = `SELECT owner, topic FROM {hold} WHERE owner = ?`
	silentOwners = `
SELECT o.owner, h.topic FROM {owner} AS o LEFT JOIN {hold} AS h ON h.owner = o.owner
WHERE o.owner <> ? AND o.heartbeat < {ago}`
	activeOwners = `SELECT DISTINCT owner FROM {task} WHERE topic IN ({list}) AND state = 0 AND owner IN ({owners})`
	dropOwners   = `DELETE FROM {owner} WHERE owner IN ({list}) AND owner <> ? AND heartbeat < {ago}`
	dropHolds    = `DELETE FROM {hold} WHERE owner IN ({list}) AND NOT EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = {hold}.owner)`
)

// Topics. Deleting a topic deletes its tasks by the schema's own means (a
// partition closed, a trigger, a foreign key). Destroy deletes the topic's
// schedule marks (destroyMarks) before the topic, in the order of a process
// that advances a mark and then pushes to the topic (locking the topic's
// row), so that the two do not deadlock.
const (
	initialize   = `{insert} {topic} (topic) VALUES (?){ignore}`
	topics       = `SELECT topic FROM {topic}`
	destroyMarks = `DELETE FROM {schedule} WHERE topic = ?`
	destroy      = `DELETE FROM {topic} WHERE topic = ?`
	purgeAll     = `DELETE FROM {task} WHERE topic = ?`
	purge        = `DELETE FROM {task} WHERE topic = ? AND sequence BETWEEN ? AND ? AND ` + settled + ` AND state IN ({list})`
	purgeBefore  = `DELETE FROM {task} WHERE topic = ? AND created <= ? AND state IN ({list})`
)

// Reads. {filters} holds the conditions of the filters that are not empty.
// Counts, results and resolutions read the topics of {topicFilter}: one,
// all, or on PostgreSQL a few dozen at a time.
const (
	infoColumns = `sequence, identifier, COALESCE(input, ''), state, descent, COALESCE(owner, ''),
       COALESCE(reference, ''), COALESCE(output, ''), created, completed, not_before, revivals`
	page = `
SELECT ` + infoColumns + ` FROM {task}
WHERE topic = ? AND sequence {beyond} ?{filters}
ORDER BY sequence {direction} LIMIT ?`
	lookup      = `SELECT ` + infoColumns + ` FROM {task} WHERE topic = ? AND sequence = ?`
	knownTopic  = `SELECT topic FROM {topic} WHERE topic = ?`
	countTotal  = `SELECT topic, state, sequence FROM {task} WHERE sequence BETWEEN ? AND ?{topicFilter}{filters}`
	countRecent = `
SELECT topic, state, sequence FROM (
    SELECT topic, state, sequence,
           ROW_NUMBER() OVER (PARTITION BY topic, identifier ORDER BY sequence DESC) AS recency
    FROM {task} WHERE sequence BETWEEN ? AND ?{topicFilter}{filters}) AS w
WHERE recency = 1`
	// count counts the candidates per topic and state; Recent keeps the
	// highest sequence of each identifier among the candidates before the
	// state filter applies.
	count = `
SELECT topic, state, COUNT(*), MAX(sequence) FROM ({candidates}) AS k
WHERE 1 = 1{states}
GROUP BY topic, state`
	// A task pushed Suspended has no completion time and is not counted.
	results = `
SELECT topic, state, COUNT(*) FROM {task}
WHERE state BETWEEN 3 AND 6 AND completed BETWEEN ? AND ?{topicFilter}
GROUP BY topic, state`
	resolveFollowing = `SELECT MIN(sequence) FROM {task} WHERE created >= ?{topicFilter}`
	resolvePreceding = `SELECT MAX(sequence) FROM {task} WHERE created <= ?{topicFilter}`
)

// queries holds the SQL of a repository, its dialect's tokens substituted.
type queries struct {
	pushTopic, pushOlder, pushOlderRead, pushOlderPoints string
	pushInsert, pushRow, pushDelete, pushRedundant       string
	advisoryShared, advisoryExclusive                    string
	advisoryIdentifiers, advisoryPolls, lockBuckets      string
	poll, pollRead                                       [2][2]string // by Order, then unconditional / conditional
	pollPoints                                           [2]string    // by Order
	pollMark, pollHold, ownerExists                      string
	completeLock, completeSet, releaseSet                string
	reviveLock, reviveSpan                               string
	revivalReset, revivalRecreate                        string
	reassignLock, reassignSet, reassignOutput            string
	reassignAll                                          string
	deferLock, deferSet, nextDue                         string
	scheduleMark, scheduleStart, scheduleMove            string
	joinPresent, joinRelease                             string
	register, reregister, priorIncarnation, heartbeat    string
	owners, expireLock, expireOwnLock, expireSet         string
	purgeOwners, silentHolds, ownHolds, silentOwners     string
	activeOwners, dropOwners, dropHolds                  string
	initialize, topics, destroyMarks, destroy            string
	purgeAll, purge                                      string
	purgeBefore, refresh, writeLock, lookup, knownTopic  string
	page                                                 [2]string // by Direction
	count                                                [2]string // by Snapshot
	results, resolveFollowing, resolvePreceding          string
	admitTurn, admitCount, admitCountLocking             string
	admitKeyed, admitKeyedLocking                        string
	admitting, admitCall                                 string
	limitsOf, pollMarked, limitsGroups                   string
	limitsHeld                                           [2]string    // plain / latest (see limitsHeld)
	limitsKeys                                           [2]string    // first page / next pages
	limitsBranch                                         [2][2]string // by Order, then unconditional / conditional
	limitsUnion                                          [2]string    // by Order
	cancelLock, cancelIdentifierLock                     string
	cancelIdentifierRead, cancelSet, cancelledOf         string
}

// newQueries returns the queries of d on the tables of schema (quoted; empty
// for the connection's own), skipping locked rows unless exclusive.
func newQueries(d *dialect, schema string, exclusive bool) queries {
	qualify := func(name string) string {
		if schema == "" {
			return name
		}
		return schema + "." + d.quoteIdentifier(name)
	}
	skip := d.forUpdate
	if skip != "" && !exclusive {
		skip += " SKIP LOCKED"
	}
	returning := ""
	if d.returning {
		returning = " RETURNING sequence"
	}
	sub := strings.NewReplacer(
		"{task}", qualify("task"), "{topic}", qualify("task_topic"), "{owner}", qualify("task_owner"),
		"{hold}", qualify("task_hold"), "{lock}", qualify("task_lock"), "{schedule}", qualify("task_schedule"),
		"{analyze}", qualify("task_analyze"), "{admit}", qualify("task_take"),
		"{now}", d.now, "{ago}", d.ago, "{greatest}", d.greatest, "{skip}", skip, "{wait}", d.forUpdate,
		"{keep}", d.keep, "{primary}", d.primary, "{dueIndex}", d.dueIndex, "{keyedIndex}", d.keyedIndex, "{deleteFrom}", strings.ReplaceAll(d.deleteFrom, "{task}", qualify("task")), "{insert}", d.insert, "{ignore}", d.ignore, "{returning}", returning,
	).Replace
	s := sub
	v := func(template string, pairs ...string) string {
		return s(strings.NewReplacer(pairs...).Replace(template))
	}
	var q queries
	q.pushTopic, q.pushOlder, q.pushOlderRead, q.pushOlderPoints = s(pushTopic), s(pushOlder), s(pushOlderRead), s(pushOlderPoints)
	q.pushInsert, q.pushRow, q.pushDelete, q.pushRedundant = s(pushInsert), s(pushRow), s(pushDelete), s(pushRedundant)
	q.advisoryShared, q.advisoryExclusive = s(advisoryShared), s(advisoryExclusive)
	q.advisoryIdentifiers, q.advisoryPolls, q.lockBuckets = s(advisoryIdentifiers), s(advisoryPolls), s(lockBuckets)
	poll, read := pollUnion(pollColumns, "", "{skip}"), pollUnion("r.sequence", pollCursor, "")
	for _, o := range []struct {
		order                      taskapi.Order
		direction, earlier, beyond string
	}{{taskapi.FIFO, "ASC", "<", ">"}, {taskapi.LIFO, "DESC", ">", "<"}} {
		singular := strings.ReplaceAll(pollSingular, "{earlier}", o.earlier)
		for i, condition := range []string{"", singular} {
			q.poll[o.order][i] = v(poll, "{condition}", condition, "{direction}", o.direction)
			q.pollRead[o.order][i] = v(read, "{condition}", condition, "{direction}", o.direction, "{beyond}", o.beyond)
		}
		q.pollPoints[o.order] = v(pollPoints, "{direction}", o.direction)
		branch := v(limitsBranch, slices.Concat(keyedTokens(d, o.direction), []string{"{due:r}", d.dueOf})...)
		q.limitsBranch[o.order] = [2]string{v(branch, "{condition}", "", "{direction}", o.direction),
			v(branch, "{condition}", singular, "{direction}", o.direction)}
		q.limitsUnion[o.order] = v(limitsUnion, "{direction}", o.direction)
	}
	q.pollMark, q.pollHold, q.ownerExists = s(pollMark), s(pollHold), s(ownerExists)
	q.completeLock, q.completeSet, q.releaseSet = s(completeLock), s(completeSet), s(releaseSet)
	q.reviveLock, q.reviveSpan = s(reviveLock), s(reviveSpan)
	q.revivalReset, q.revivalRecreate = s(revivalReset), s(revivalRecreate)
	q.reassignLock, q.reassignSet, q.reassignOutput = s(reassignLock), s(reassignSet), s(reassignOutput)
	q.reassignAll = s(reassignAll)
	q.deferLock, q.deferSet, q.nextDue = s(deferLock), s(deferSet), s(nextDue)
	q.scheduleMark, q.scheduleStart, q.scheduleMove = s(scheduleMark), s(scheduleStart), s(scheduleMove)
	q.joinPresent, q.joinRelease = s(joinPresent), s(joinRelease)
	q.register, q.reregister, q.priorIncarnation, q.heartbeat = s(register), s(reregister), s(priorIncarnation), s(heartbeat)
	q.owners, q.expireLock, q.expireOwnLock, q.expireSet = s(owners), s(expireLock), s(expireOwnLock), s(expireSet)
	q.purgeOwners, q.silentHolds, q.ownHolds, q.silentOwners = s(purgeOwners), s(silentHolds), s(ownHolds), s(silentOwners)
	q.activeOwners, q.dropOwners, q.dropHolds = s(activeOwners), s(dropOwners), s(dropHolds)
	q.initialize, q.topics, q.destroyMarks, q.destroy = s(initialize), s(topics), s(destroyMarks), s(destroy)
	q.purgeAll, q.purge = s(purgeAll), s(purge)
	q.purgeBefore, q.refresh, q.writeLock, q.lookup, q.knownTopic = s(purgeBefore), s(d.refresh), s(d.writeLock), s(lookup), s(knownTopic)
	q.page[taskapi.Forward] = v(page, "{beyond}", ">", "{direction}", "ASC")
	q.page[taskapi.Backward] = v(page, "{beyond}", "<", "{direction}", "DESC")
	q.count[taskapi.Total] = v(count, "{candidates}", countTotal)
	q.count[taskapi.Recent] = v(count, "{candidates}", countRecent)
	q.results, q.resolveFollowing, q.resolvePreceding = s(results), s(resolveFollowing), s(resolvePreceding)
	q.admitTurn, q.admitting, q.admitCall = s(admitTurn), s(admitting), s(admitCall)
	q.admitCount, q.admitCountLocking = v(admitCount, "{latest}", ""), v(admitCount, "{latest}", d.keep)
	q.admitKeyed, q.admitKeyedLocking = v(admitKeyed, "{latest}", ""), v(admitKeyed, "{latest}", d.keep)
	q.limitsOf, q.pollMarked, q.limitsGroups = s(limitsOf), s(pollMarked), s(limitsGroups)
	keyed := keyedTokens(d, "ASC")
	q.limitsHeld = [2]string{v(limitsHeld, slices.Concat(keyed, []string{"{latest}", ""})...), v(limitsHeld, slices.Concat(keyed, []string{"{latest}", d.keep})...)}
	q.limitsKeys = [2]string{v(limitsKeys, slices.Concat(keyed, []string{"{from}", ">="})...), v(limitsKeys, slices.Concat(keyed, []string{"{from}", ">"})...)}
	q.cancelLock, q.cancelIdentifierLock = s(cancelLock), s(cancelIdentifierLock)
	q.cancelIdentifierRead, q.cancelSet, q.cancelledOf = s(cancelIdentifierRead), s(cancelSet), s(cancelledOf)
	return q
}

// pollUnion returns the union of the two branches of a poll (see
// pollCandidates) with columns, cursor and locking in both.
func pollUnion(columns, cursor, locking string) string {
	branch := func(which, order string) string {
		return strings.NewReplacer("{which}", which, "{order}", order, "{columns}", columns,
			"{cursor}", cursor, "{locking}", locking).Replace(pollBranch)
	}
	return strings.NewReplacer("{ready}", branch(pollReady, pollReadyOrder),
		"{due}", branch(pollDue, pollDueOrder)).Replace(pollCandidates)
}
