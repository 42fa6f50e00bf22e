package taskpg

import (
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The SQL of every call. Placeholders in braces are substituted once, in New:
// {schema} by the quoted schema name, {sequence} by the task sequence as a
// string literal for nextval, {skip} by " SKIP LOCKED" unless the repository
// is exclusive, {now} by the moment of the statement in UTC; the other
// placeholders pick the variant of a query. Values are always parameters.
// Times are stored as UTC in columns without time zone, and record the
// moment of the statement that writes them, not the start of the caller's
// transaction.
//
// Every statement that reads, changes or deletes tasks is planned for its
// arguments every time (see pipeline and prepare.go): with the topic known,
// the planner reads the topic's partition and locks nothing else. Statements that span topics name them in arrays of a few dozen at a
// time ($1::text[] below), so that no statement locks every partition.

// now is the moment of the statement in UTC.
const now = `(statement_timestamp() AT TIME ZONE 'utc')`

// Push. The candidates are sorted by their place in the slice before nextval
// runs (PostgreSQL evaluates volatile output expressions after the sort), so
// sequences follow creation order. The topic check keeps an unknown topic from
// failing the statement (no partition) and from using sequences. Every push
// statement writes not_before (NULL for a task that is due at once) and
// revivals (0 but for the new tasks of a revival).
const pushInsert = `
INSERT INTO {schema}.task (topic, sequence, identifier, state, reference, input, not_before, revivals)
SELECT $1::text, nextval({sequence}), c.identifier, c.state, NULLIF(c.reference, ''), NULLIF(c.input, ''),
       c.not_before, c.revivals
FROM unnest($2::text[], $3::smallint[], $4::text[], $5::text[], $6::timestamp[], $7::integer[])
     WITH ORDINALITY AS c (identifier, state, reference, input, not_before, revivals, ordinal)
WHERE EXISTS (SELECT FROM {schema}.task_topic WHERE topic = $1{uncapped})
ORDER BY c.ordinal
RETURNING sequence`

// Append of a single task, the common push of a producer in its own
// transaction: scalar parameters spare the server the arrays, the ordinality
// and the sort, about a tenth of the statement's cost.
const pushOne = `
INSERT INTO {schema}.task (topic, sequence, identifier, state, reference, input, not_before, revivals)
SELECT $1::text, nextval({sequence}), $2::text, $3::smallint, NULLIF($4::text, ''), NULLIF($5::text, ''),
       $6::timestamp, $7::integer
WHERE EXISTS (SELECT FROM {schema}.task_topic WHERE topic = $1{uncapped})
RETURNING sequence`

// pushOneAlone is pushOne for a statement that is a transaction of its own:
// it leaves the topic check to the partition routing, whose failure (no
// partition for the topic, or the closed partition of a destroyed one)
// mapError reports as an unknown topic. Inside a caller's transaction that
// failure would abort the transaction, hence the explicit check of pushOne
// there. Skipping it saves about 7% of the cost of a single push.
const pushOneAlone = `
INSERT INTO {schema}.task (topic, identifier, state, reference, input, not_before, revivals)
VALUES ($1, $2, $3, NULLIF($4::text, ''), NULLIF($5::text, ''), $6::timestamp, $7::integer)
RETURNING sequence`

// Append in bulk draws the sequences of the new tasks in one statement, then
// copies the tasks in (COPY). The statement locks the topic's row until the
// push commits, so that the partition stays open until the copy is done; for
// an unknown topic it returns no row and uses no sequence.
const pushSequences = `
SELECT nextval({sequence})
FROM (SELECT FROM {schema}.task_topic WHERE topic = $1{uncapped} FOR KEY SHARE) AS p, generate_series(1, $2)`

// Capacity (see migrations 00010, 00013, 00015 and 00016): the push statements store
// tasks only in a topic without a capacity ({uncapped} in their check of
// the topic's row, and in the CTE by which an insertion mode changes older
// tasks, which would run even when the insert stores nothing). For a topic
// with one they store nothing, and the push goes again as the admission of
// capacity.go has it:
//
//   - first admitted, with tickets: the admission CTE publishes the Ready
//     tasks the push stores, draws a ticket per task ($8) and compares the
//     last with the topic's bound. Within it, the push
//     turns taskrepo.admitting on for the transaction, as the trigger of the
//     topic's partition asks of every insert (pushOneAlone meets it), and
//     stores its tasks; past it, or for a topic without a capacity, it stores
//     nothing and changes nothing.
//   - else counted: the push turns taskrepo.admitting on and stores its
//     tasks, and the statement after it runs task_admit (admitKeyed of
//     capacity.go), which counts and publishes them. It comes in a
//     transaction (or savepoint) of its own, after the one of the admitted
//     push, which took back what it published.
//
// The CTE reads the topic's row under another name, so that the
// notifications (see notifying) go with the statement's own check.
var (
	uncapped = strings.NewReplacer("{uncapped}", " AND capacity IS NULL",
		"{uncappedOlder}", " AND EXISTS (SELECT FROM {schema}.task_topic WHERE topic = $1 AND capacity IS NULL)")
	admitted = strings.NewReplacer("{uncapped}", " AND (SELECT fits FROM admission)",
		"{uncappedOlder}", " AND (SELECT fits FROM admission)")
	counted = strings.NewReplacer("{uncapped}", " AND set_config('taskrepo.admitting', 'counted', true) IS NOT NULL",
		"{uncappedOlder}", "")
)

const (
	// tickets decides in order: the push publishes its Ready tasks
	// ({publish}: task_publish of migration 00015, which a count reads) before
	// it draws its tickets ({draw}: the last of $8 tickets, or of one).
	// Sequences are looked up by name, {tickets} and {bound} being the
	// schema and the prefix as a string literal; {admissionKey} is the
	// schema and a dot, as a literal, whose hashtext with the topic's name
	// is the topic's key.
	tickets = `CASE WHEN capacity IS NULL THEN false ELSE ` + ticketsFit + ` END`
	// ticketsFit is tickets for a statement that does not read the topic's
	// row: a topic without its sequences fails it (42P01).
	ticketsFit = `CASE WHEN NOT {publish} THEN false
        WHEN {draw} > pg_sequence_last_value(({bound} || md5($1))::regclass) THEN false
        ELSE set_config('taskrepo.admitting', 'ticket', true) IS NOT NULL END`
	drawOne = `nextval(({tickets} || md5($1))::regclass)`
	// OFFSET 0 looks the sequence up once, not once per ticket.
	drawMany = `(SELECT max(nextval(s.tickets))
        FROM (SELECT ({tickets} || md5($1))::regclass AS tickets OFFSET 0) AS s, generate_series(1, $8::integer))`
	// A push of many tasks decides once, in a CTE that its CTE of older
	// tasks (if any) reads too.
	admissionCTE = `admission AS MATERIALIZED (SELECT {decide} AS fits FROM {schema}.task_topic WHERE topic = $1)`
)

// one fills tickets for a push of one task, which publishes it and draws
// one ticket, many for a push of $8 Ready tasks; oneAlone for a push of one
// task in a transaction of its own, which holds no other push and so
// publishes with the first lock that task_publish would take, without
// calling it (a PL/pgSQL call on the path of every such push).
var (
	one = strings.NewReplacer("{draw}", drawOne,
		"{publish}", "{schema}.task_publish(hashtext({admissionKey} || $1), 1::bigint)")
	many = strings.NewReplacer("{draw}", drawMany,
		"{publish}", "{schema}.task_publish(hashtext({admissionKey} || $1), $8::integer::bigint)")
	oneAlone = strings.NewReplacer("{draw}", drawOne,
		"{publish}", "pg_advisory_xact_lock_shared(hashtext({admissionKey} || $1), 16777217) IS NOT NULL") // (1 << 24) | 1
)

// admittedPush returns the admitted form of a push statement of many
// tasks: the admission CTE first among its CTEs. The CTE reads the
// topic's row with the notifications' check spelled otherwise (see
// notifying), so that they stay with the statement's own.
func admittedPush(statement string) string {
	cte := strings.NewReplacer("{decide}", many.Replace(tickets),
		"task_topic WHERE", "task_topic AS t WHERE").Replace(admissionCTE)
	statement = admitted.Replace(statement)
	if rest, ok := strings.CutPrefix(statement, "WITH "); ok {
		return "WITH " + cte + ",\n" + rest
	}
	return "WITH " + cte + statement
}

// admittedOne returns the admitted form of pushOne, the push of one task
// that decides in its check of the topic's row: a CTE costs a tenth of the
// push.
func admittedOne(statement string) string {
	return strings.Replace(statement, "{uncapped}", " AND "+one.Replace(tickets), 1)
}

// admittedOneAlone is the admitted push of one task in a transaction of its
// own, which leaves the check of the topic to its sequences and the
// partition routing, as pushOneAlone does: a topic without sequences fails
// it (42P01: see ticketless), and a removed capacity leaves them spent, so
// that the push goes to task_admit, which says that it is gone.
var admittedOneAlone = `
INSERT INTO {schema}.task (topic, identifier, state, reference, input, not_before, revivals)
SELECT $1::text, $2::text, $3::smallint, NULLIF($4::text, ''), NULLIF($5::text, ''), $6::timestamp, $7::integer
WHERE ` + oneAlone.Replace(ticketsFit) + `
RETURNING sequence`

// The insertion modes change older tasks in a data-modifying CTE of the same
// statement: it sees the tasks as they were before the statement, so it never
// touches the new ones. Before it, in a statement of its own, the push takes
// the locks of its identifiers (see lockIdentifiers), so that its snapshot
// sees what a concurrent push of the same identifier committed.
//
// Statements that change rows they lock first (here and below) find them by
// sequence = ANY (ARRAY(locking sub-select)) rather than by a join: the
// sub-select runs once (a rescan would skip the rows the statement itself has
// just changed), and the plan is a lookup of the primary key, which leads
// with sequence. Rows are locked in sequence order against deadlocks.
//
// The older tasks are looked up one identifier at a time: OFFSET 0 keeps the
// lateral sub-select from being merged into a join, so that each lookup is a
// probe of the identifier index. Left to itself, the planner scans the whole
// partition once per push whenever its statistics are missing or stale.
const (
	olderTasks = `
    WHERE t.topic = $1{uncappedOlder} AND t.sequence = ANY (ARRAY(
        SELECT sequence FROM {schema}.task
        WHERE topic = $1 AND state BETWEEN {from} AND {to} AND sequence = ANY (ARRAY(
            SELECT o.sequence FROM unnest($2::text[]) AS i (identifier),
            LATERAL (SELECT sequence FROM {schema}.task
                     WHERE topic = $1 AND identifier = i.identifier AND state BETWEEN {from} AND {to}
                     OFFSET 0) AS o))
        ORDER BY sequence FOR UPDATE{skip})))`
	pushRedundant = `WITH older AS (
    UPDATE {schema}.task AS t SET state = 8, descent = GREATEST(t.state, t.descent)` + olderTasks
	pushDelete = `WITH older AS (
    DELETE FROM {schema}.task AS t` + olderTasks
)

// Advisory locks, in their two-key form, which keeps clear of the one-key
// locks of others (goose's among them). The first key names the kind of lock
// (internal/lockkey), the second the topic or the identifier. A push of a
// few identifiers takes the topic's insertion lock shared and each
// identifier's lock; a larger one takes the topic's insertion lock alone, so
// that no push takes more than a few of the server's lock slots. Destroy
// takes the topic's term lock exclusively (see leader.go).
const (
	lockShared      = `SELECT pg_advisory_xact_lock_shared($1, $2)`
	lockExclusive   = `SELECT pg_advisory_xact_lock($1, $2)`
	lockIdentifiers = `
SELECT count(pg_advisory_xact_lock($1, k)) FROM (SELECT k FROM unnest($2::int4[]) AS k ORDER BY k) AS s`
	// Conditional polls of a topic take turns on this lock; taskansi takes
	// the same (1952543595 is "task" in ASCII).
	pollLock = `SELECT pg_advisory_xact_lock(1952543595, hashtext($1))`
)

// Poll. The sub-select locks the candidates, and the update finds them by
// their row address (ctid, unique within the topic's partition), which saves
// a descent of the primary key per task: a locked row keeps its address until
// the statement changes it. A candidate that a transaction committed after
// the statement began has changed and left Ready again has an address the
// update cannot see; it stays Ready and the poll returns fewer tasks, never
// one twice. The owner check is folded in; only when nothing comes back does
// Poll look whether the owner exists. The conditions skip a candidate while
// its identifier has an earlier Ready task (in poll order) or a task in a
// blocking state ($4: check.Polling.Blocking, Active plus the condition's
// Blocking states, and Expired for a poll that awaits revival; the
// statement is the same for every set). The package documentation tells
// how conditional polls are serialized. A poll that took tasks records
// that its owner holds tasks in the topic (task_hold), where Expire will
// look.
//
// The candidates come from two branches, each on an index of its own, so
// that a poll never walks over the tasks that wait for their time, however
// many: the tasks that were never deferred, in poll order (task_ready, whose
// predicate the first branch matches exactly), and the deferred ones that
// are due, up to now, by their times (task_deferred: the earliest first for
// FIFO, the latest for LIFO). A locking sub-select may not be a branch of a
// UNION itself, hence the SELECT * around each. Each branch locks up to $3
// candidates; the update takes the first $3 of both in poll order. The rows
// that a branch locked and the update did not take, $3 at most, stay locked
// until the poll's transaction ends, and concurrent polls skip them (or wait
// for them, WithExclusive) meanwhile: acceptable for so few rows.
const (
	pollTemplate = `
WITH {with}polled AS (
    UPDATE {schema}.task AS t SET state = 0, owner = $2
    WHERE t.ctid = ANY (ARRAY({candidates})){prune}{term}
    RETURNING t.sequence, t.identifier, coalesce(t.input, '') AS input, t.not_before),
held AS (
    INSERT INTO {schema}.task_hold (owner, topic) SELECT $2, $1 WHERE EXISTS (SELECT FROM polled)
    ON CONFLICT DO NOTHING)
SELECT sequence, identifier, input FROM polled
UNION ALL -- the row of sequence 0 (no task has it) says that the owner is not registered
SELECT 0, '', '' WHERE NOT EXISTS (SELECT FROM {schema}.task_owner WHERE owner = $2){marker}{floorMarker}`
	// pruneTask, {prune} of a poll on task, names the topic's partition
	// to the planner. A poll on the partition has none: there, the
	// update's one way to its rows is the address of each (a TID scan),
	// where a generic plan made on a small partition walked its primary
	// key, which leads with the topic too, on every later poll.
	pruneTask = ` AND t.topic = $1`
	// pollCandidates, {candidates} of a poll that is not keyed: the first
	// {take} of both branches in poll order.
	pollCandidates = `
        SELECT c.ctid FROM (
            SELECT * FROM ({ready}) AS ready
            UNION ALL
            SELECT * FROM ({due}) AS due) AS c
        ORDER BY c.sequence {direction} LIMIT {take}`
	// pollTerm, {term} of pollTemplate in a poll under a term ({number}:
	// its parameter), lets the update claim only while the term is this
	// owner's and current at the statement, and locks the term's row FOR
	// SHARE until the poll's transaction ends: a Lead that takes the topic
	// over updates the row, so it waits for the poll to commit, and a poll
	// that waited for a Lead finds the term over (READ COMMITTED reads the
	// row's latest version again). The planner makes the sub-select, which
	// names no column of the update, a one-time filter: when no term is
	// current, no candidate is read, let alone locked. A poll without a
	// term has an empty {term}: the same statement as ever.
	pollTerm = `
      AND EXISTS (SELECT FROM {schema}.task_leader
                  WHERE topic = $1 AND owner = $2 AND term = {number} AND expires > {now} FOR SHARE)`
	// pollBranch is a branch of the candidates, {ready} or {due} of
	// pollTemplate: {which} and {order} pick its tasks and their order.
	pollBranch = `
                SELECT r.ctid, r.sequence FROM {schema}.task AS r
                WHERE r.topic = $1 AND r.state = 1 AND {which}
                  AND EXISTS (SELECT FROM {schema}.task_owner WHERE owner = $2){condition}
                ORDER BY {order} LIMIT {take}
                FOR UPDATE OF r{skip}`
	pollReady      = `r.not_before IS NULL{floor}`
	pollReadyOrder = `r.sequence {direction}`
	pollDue        = `r.not_before IS NOT NULL AND r.not_before <= {now}`
	pollDueOrder   = `r.not_before {direction}, r.sequence {direction}`
	// The conditions must probe the identifier index, task by task. With
	// no statistics, or statistics taken while no task was Ready, the
	// planner rather walked the whole ready index (or the active one) for
	// every candidate: 2.8 s for a poll of 100 with 200,000 Ready tasks,
	// against 2 ms. "state + 0" matches no partial index predicate, which
	// leaves the identifier index as the only index that fits. On task,
	// {topicOf:e} and {topicOf:b} name the topic's partition; a poll on
	// the partition leaves them out, so that its generic plan, however
	// small the partition was when it was made, has no other index to walk
	// (the primary key, which holds the topic and the sequence).
	pollSingular = `
          AND NOT EXISTS (SELECT FROM {schema}.task AS e
                          WHERE {topicOf:e}e.identifier = r.identifier
                            AND e.state + 0 = 1 AND e.sequence {earlier} r.sequence)
          AND NOT EXISTS (SELECT FROM {schema}.task AS b
                          WHERE {topicOf:b}b.identifier = r.identifier
                            AND b.state + 0 = ANY ($4::smallint[]))`
)

// shortMark starts the text that completeOwn casts to a number, which
// fails the statement, when it wrote fewer tasks than named: a failure
// that undoes the statement and names itself in the server's log (and to
// shortCompletion, by shortPrefix). A function that raised would need a
// migration; the cast needs none.
const (
	shortPrefix = "taskrepo: not every task of the completion"
	shortMark   = `'` + shortPrefix + ` was Active and this owner''s; tasks that were: '`
)

// Complete, Release, ReviveTasks, Reassign and Defer name tasks by ranges of
// sequences ($2, $3). They lock the matching rows first (a locked row keeps
// its state until the transaction ends) and write only when every named task
// matched: all or nothing in one statement. Complete and Reassign take each
// task's new state from its range. When not every task matched, faults
// names the ones that did not.
const (
	lockedTasks = `
locked AS MATERIALIZED (
    SELECT sequence FROM {schema}.task
    WHERE topic = $1 AND sequence = ANY (ARRAY(SELECT generate_series(lo, hi) FROM runs))
      AND {match}
    ORDER BY sequence FOR UPDATE)`
	ofLockedTasks = `t.topic = $1 AND t.sequence = ANY (ARRAY(SELECT sequence FROM locked))`
	complete      = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::smallint[], $5::text[]) AS r (lo, hi, state, output)),` +
		lockedTasks + `
UPDATE {schema}.task AS t -- descent stays: max(Active, descent) = descent
SET state = r.state, output = NULLIF(r.output, ''), completed = {now}
FROM (SELECT generate_series(lo, hi) AS sequence, state, output FROM runs) AS r
WHERE ` + ofLockedTasks + ` AND t.sequence = r.sequence
  AND (SELECT count(*) FROM locked) = $7`
	// completeOwn is complete in a round trip of taskpg's own, where a
	// statement that fails undoes only itself. It writes the matching tasks
	// without locking them first and fails (see shortCompletion) when it
	// wrote fewer than named, which undoes what it wrote: all or nothing
	// still, as an UPDATE that waited for a row that a concurrent
	// transaction changed checks the row's new version and skips it. It
	// saves complete's pass that locks each task, a log record and a
	// descent of the primary key per task: about a quarter of the
	// statement's time at a batch of 500. Inside a caller's transaction
	// the failure would abort the transaction, so complete runs there.
	// Both reach the tasks through the primary key by their sequences;
	// state + 0 (here and in matchActive) keeps the planner off
	// task_active, whose entries are every Active task of the owner, dead
	// ones too until a vacuum: a consumer that buffers batches completes
	// a few hundred tasks among thousands it holds, and a plan through
	// that index read them all and compared each with every named
	// sequence (TestCompletionIgnoresTheOwnersOtherTasks).
	completeOwn = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::smallint[], $5::text[]) AS r (lo, hi, state, output)),
written AS (
    UPDATE {schema}.task AS t -- descent stays: max(Active, descent) = descent
    SET state = r.state, output = NULLIF(r.output, ''), completed = {now}
    FROM (SELECT generate_series(lo, hi) AS sequence, state, output FROM runs) AS r
    WHERE t.topic = $1 AND t.sequence = ANY (ARRAY(SELECT generate_series(lo, hi) FROM runs))
      AND t.sequence = r.sequence AND t.state + 0 = 0 AND t.owner = $6
    RETURNING 1)
SELECT CASE WHEN count(*) = $7 THEN count(*) ELSE (` + shortMark + ` || count(*))::bigint END FROM written`
	// completeOne is complete of one task, the common batch at everyday
	// rates: the same all or nothing (the task changes only when it is
	// Active and this owner's), as one UPDATE that PostgreSQL plans in
	// about a third of complete's time. state + 0 keeps the planner off
	// task_active, whose entries are every Active task of the owner: with
	// statistics behind it took that index for the primary key's one entry.
	completeOne = `
UPDATE {schema}.task -- descent stays: max(Active, descent) = descent
SET state = $3, output = NULLIF($4, ''), completed = {now}
WHERE topic = $1 AND sequence = $2 AND state + 0 = 0 AND owner = $5`
	release = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS r (lo, hi)),` +
		lockedTasks + `
UPDATE {schema}.task AS t SET state = 1, owner = NULL -- descent, output and completed stay
WHERE ` + ofLockedTasks + ` AND (SELECT count(*) FROM locked) = $5`
	reviveTasks = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS r (lo, hi)),` +
		lockedTasks + `
UPDATE {schema}.task AS t SET {revival}
WHERE ` + ofLockedTasks + ` AND (SELECT count(*) FROM locked) = $4` + revivedColumns
	// Reassign: a run's output ($6) replaces the tasks' own unless it is
	// empty. A task already in the state of its result keeps its descent
	// and completion time, and changes only when it gets an output.
	reassign = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::smallint[], $6::text[]) AS r (lo, hi, state, output)),` +
		lockedTasks + `,
moved AS (
    UPDATE {schema}.task AS t
    SET state = r.state,
        descent = CASE WHEN t.state = r.state THEN t.descent ELSE GREATEST(t.state, t.descent) END,
        completed = CASE WHEN t.state = r.state THEN t.completed ELSE coalesce(t.completed, {now}) END,
        output = coalesce(NULLIF(r.output, ''), t.output)
    FROM (SELECT generate_series(lo, hi) AS sequence, state, output FROM runs) AS r
    WHERE ` + ofLockedTasks + ` AND t.sequence = r.sequence
      AND (t.state <> r.state OR r.output <> '') AND (SELECT count(*) FROM locked) = $5)
SELECT count(*) FROM locked`
	// Defer sets the time of Ready tasks ($4, NULL to clear it), which
	// moves them between the two indexes that polls read.
	deferTasks = `
WITH runs AS (SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS r (lo, hi)),` +
		lockedTasks + `
UPDATE {schema}.task AS t SET not_before = $4::timestamp
WHERE ` + ofLockedTasks + ` AND (SELECT count(*) FROM locked) = $5`
	matchActive    = `state + 0 = 0 AND owner = $6`
	matchRevivable = `state BETWEEN 2 AND 6`
	matchReady     = `state = 1`
	faults         = `
SELECT s FROM unnest($2::bigint[]) AS s
WHERE NOT EXISTS (SELECT FROM {schema}.task WHERE topic = $1 AND sequence = s AND {match})
ORDER BY s`
)

// NextDue: the earliest time of the topic's deferred Ready tasks that are
// not yet due, none when no task waits (or the topic has no partition).
// The conditions match the predicate of task_deferred, whose second column
// after the topic is the time, so that the statement reads the first entry
// after now: one descent of the index, whatever the number of tasks that
// wait. It is min(not_before) written as ORDER BY ... LIMIT 1: without
// statistics the planner takes an aggregate of every entry after now for as
// cheap as the first entry, and reads them all.
const nextDue = `
SELECT not_before FROM {schema}.task
WHERE topic = $1 AND state = 1 AND not_before IS NOT NULL AND not_before > {now}
ORDER BY not_before LIMIT 1`

// Schedules (Mark and Advance) keep their marks in the task_schedule table. A
// mark moves by compare-and-set: the first one is inserted unless the row
// exists (scheduleStart), a later one replaces the mark that the caller read
// (scheduleMove, $3). An UPDATE that waited for the row lock of a concurrent
// one evaluates its WHERE again on the version that committed (READ
// COMMITTED), so that of several advances from one mark one changes the row
// and the others change nothing.
const (
	scheduleMark  = `SELECT mark FROM {schema}.task_schedule WHERE topic = $1 AND name = $2`
	scheduleStart = `INSERT INTO {schema}.task_schedule (topic, name, mark) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`
	scheduleMove  = `UPDATE {schema}.task_schedule SET mark = $4 WHERE topic = $1 AND name = $2 AND mark = $3`
)

// Revivals.
const (
	reviveSpan = `
UPDATE {schema}.task AS t SET {revival}
WHERE t.topic = $1 AND t.sequence = ANY (ARRAY(
    SELECT sequence FROM {schema}.task
    WHERE topic = $1 AND state = $2 AND sequence BETWEEN $3 AND $4 AND ` + settled6 + `
    ORDER BY sequence LIMIT $5 FOR UPDATE{skip}))` + revivedColumns
	revivedColumns = `
RETURNING t.sequence, t.identifier, coalesce(t.input, ''), coalesce(t.reference, ''), t.revivals`
	// A reset counts its revival on the row and makes the task due at once;
	// a recreated row keeps its count (its successor gets one more, see
	// revive) and its time.
	revivalReset = `state = 1, descent = GREATEST(t.state, t.descent), owner = NULL, completed = NULL,
    not_before = NULL, revivals = t.revivals + 1`
	revivalRecreate = `state = 7, descent = GREATEST(t.state, t.descent)`
	reassignAll     = `
UPDATE {schema}.task
SET state = $5, descent = GREATEST(state, descent), completed = coalesce(completed, {now})
WHERE topic = $1 AND state = $2 AND sequence BETWEEN $3 AND $4 AND ` + settled6
	// settled6 bounds ReviveCompletedBy and ReassignCompletedBy by completion time
	// ($6, NULL for none): a task completed later is left out, one never
	// completed is not (see taskapi.CompletionBounded).
	settled6 = `($6::timestamp IS NULL OR completed IS NULL OR completed <= $6::timestamp)`
)

// Join releases one group; $3 holds the states that make an identifier count
// as present (Suspended for Singular, all but Redundant for Eternal). A
// released task keeps nothing of its suspension: no owner, output or
// completion time.
const join = `
WITH g AS (SELECT unnest($2::text[]) AS identifier)
UPDATE {schema}.task AS t SET state = 1, owner = NULL, output = NULL, completed = NULL
FROM g
WHERE t.topic = $1 AND t.identifier = g.identifier AND t.state = 4
  AND NOT EXISTS (SELECT FROM g AS m
                  WHERE NOT EXISTS (SELECT FROM {schema}.task AS x
                                    WHERE x.topic = $1 AND x.identifier = m.identifier
                                      AND x.state = ANY ($3::smallint[])))`

// Owners. Durations are parameters in microseconds; {silent} is true for an
// owner (o) without a heartbeat within the last $2 microseconds.
const (
	// Register: whether the row is new (xmax is 0 for a row that this
	// statement inserted rather than updated), and the incarnation that
	// registered the owner before, if any.
	register = `
WITH prior AS (SELECT incarnation FROM {schema}.task_owner WHERE owner = $1)
INSERT INTO {schema}.task_owner AS o (owner, incarnation) VALUES ($1, $2)
ON CONFLICT (owner) DO UPDATE SET heartbeat = {now}, incarnation = $2
RETURNING o.xmax = 0, coalesce((SELECT incarnation FROM prior), '')`
	priorIncarnation = `SELECT coalesce(incarnation, '') FROM {schema}.task_owner WHERE owner = $1`
	heartbeat        = `UPDATE {schema}.task_owner SET heartbeat = {now} WHERE owner = $1`
	owners           = `SELECT owner FROM {schema}.task_owner AS o WHERE owner <> $1 AND NOT {silent}`
	silent           = `(o.heartbeat < {now} - $2 * interval '1 microsecond')`
	// The topics in which owners other than $1 that are silent (or not
	// registered at all) may hold Active tasks.
	silentHolds = `
SELECT h.owner, h.topic FROM {schema}.task_hold AS h
WHERE h.owner <> $1 AND NOT EXISTS (SELECT FROM {schema}.task_owner AS o WHERE o.owner = h.owner AND NOT {silent})`
	ownHolds = `SELECT topic FROM {schema}.task_hold WHERE owner = $1`
	// Expiry of the holds of some topics ($3) by owners ($4). A row locked
	// by its owner's transaction belongs to a live owner, so expiry skips
	// it. Sequences are unique across topics (one sequence for all).
	expire = `
UPDATE {schema}.task AS t SET state = 2
WHERE t.topic = ANY ($3::text[]) AND t.state = 0 AND t.sequence = ANY (ARRAY(
    SELECT a.sequence FROM {schema}.task AS a
    WHERE a.topic = ANY ($3::text[]) AND a.state = 0 AND a.owner = ANY ($4::text[]) AND a.owner <> $1
      AND NOT EXISTS (SELECT FROM {schema}.task_owner AS o WHERE o.owner = a.owner AND NOT {silent})
    ORDER BY a.sequence FOR UPDATE OF a{skip}))`
	// The expiry of an owner's earlier incarnation waits for its rows: the
	// transactions that hold them end with their connections.
	expireOwn = `
UPDATE {schema}.task AS t SET state = 2
WHERE t.topic = ANY ($1::text[]) AND t.state = 0 AND t.sequence = ANY (ARRAY(
    SELECT a.sequence FROM {schema}.task AS a
    WHERE a.topic = ANY ($1::text[]) AND a.state = 0 AND a.owner = $2
    ORDER BY a.sequence FOR UPDATE OF a))`
	// PurgeOwners: the silent owners with the topics they hold, which of
	// them hold Active tasks in some topics, and the deletion of the others
	// with their holds.
	silentOwners = `
SELECT o.owner, coalesce(array_agg(h.topic) FILTER (WHERE h.topic IS NOT NULL), '{}')
FROM {schema}.task_owner AS o LEFT JOIN {schema}.task_hold AS h ON h.owner = o.owner
WHERE o.owner <> $1 AND {silent}
GROUP BY o.owner`
	activeOwners = `
SELECT DISTINCT owner FROM {schema}.task WHERE topic = ANY ($1::text[]) AND state = 0 AND owner = ANY ($2::text[])`
	purgeOwners = `
WITH gone AS (
    DELETE FROM {schema}.task_owner AS o WHERE o.owner = ANY ($3::text[]) AND o.owner <> $1 AND {silent}
    RETURNING o.owner),
released AS (DELETE FROM {schema}.task_hold WHERE owner IN (SELECT owner FROM gone))
SELECT count(*) FROM gone`
)

// Topics. Inserting and deleting a topic opens and closes its partition (a
// trigger of the schema). The functions run with the rights of the role
// that migrated, so that an application role may call them. Destroy
// deletes the topic's schedule marks (destroyMarks) before the topic, in
// the order of a process that advances a mark and then pushes to the topic
// (locking the topic's row), so that the two do not deadlock.
const (
	initialize   = `INSERT INTO {schema}.task_topic (topic) VALUES ($1) ON CONFLICT DO NOTHING`
	topics       = `SELECT topic FROM {schema}.task_topic`
	destroyMarks = `DELETE FROM {schema}.task_schedule WHERE topic = $1`
	destroy      = `DELETE FROM {schema}.task_topic WHERE topic = $1`
	truncate     = `SELECT {schema}.task_truncate($1)`
	analyze      = `SELECT {schema}.task_analyze($1::text[])`
	purge        = `
DELETE FROM {schema}.task
WHERE topic = $1 AND sequence BETWEEN $2 AND $3 AND state = ANY ($4::smallint[])
  AND ($5::timestamp IS NULL OR completed IS NULL OR completed <= $5::timestamp)`
	// Every task created at or before $2 in the given states.
	purgeBefore = `
DELETE FROM {schema}.task WHERE topic = $1 AND created <= $2::timestamp AND state = ANY ($3::smallint[])`
)

// Reads. An empty string as a text filter filters nothing; PostgreSQL folds
// the test away when it plans for the actual values.
const (
	infoColumns = `sequence, identifier, coalesce(input, ''), state, descent, coalesce(owner, ''),
       coalesce(reference, ''), coalesce(output, ''), created, completed, not_before, revivals`
	page = `
SELECT ` + infoColumns + ` FROM {schema}.task
WHERE topic = $1 AND sequence {beyond} $2 AND state = ANY ($3::smallint[])
  AND ($4::text = '' OR reference = $4) AND ($5::text = '' OR identifier = $5)
ORDER BY sequence {direction} LIMIT $6`
	lookup      = `SELECT ` + infoColumns + ` FROM {schema}.task WHERE topic = $1 AND sequence = $2`
	knownTopics = `SELECT topic FROM {schema}.task_topic WHERE topic = ANY ($1::text[])`
	// Recent keeps the highest sequence of each identifier among the
	// candidates before the state filter applies.
	count = `
SELECT topic, state, count(*), max(sequence)
FROM (SELECT {distinct} topic, identifier, state, sequence FROM {schema}.task
      WHERE topic = ANY ($1::text[]) AND sequence BETWEEN $2 AND $3
        AND ($4::text = '' OR reference = $4) AND ($5::text = '' OR identifier = $5)
      {distinctOrder}) AS candidate
WHERE state = ANY ($6::smallint[])
GROUP BY topic, state`
	// A task pushed Suspended has no completion time and is not counted.
	results = `
SELECT topic, state, count(*) FROM {schema}.task
WHERE topic = ANY ($1::text[]) AND state BETWEEN 3 AND 6
  AND completed BETWEEN coalesce($2::timestamp, '-infinity') AND coalesce($3::timestamp, 'infinity')
GROUP BY topic, state`
	resolveFollowing = `SELECT min(sequence) FROM {schema}.task WHERE topic = ANY ($1::text[]) AND created >= $2::timestamp`
	resolvePreceding = `SELECT max(sequence) FROM {schema}.task WHERE topic = ANY ($1::text[]) AND created <= $2::timestamp`
)

// queries holds the SQL of a repository, its placeholders substituted.
type queries struct {
	push, admitted, counted                        [4]string // by Insertion; admitted, counted: into a topic with a capacity
	pushOne, pushOneAlone, pushSequences           string
	admittedOne, admittedOneAlone                  string
	poll, pollTermed                               [3][2][2]string // by pollMode, by Order, then unconditional / conditional
	complete, completeOwn, completeOne, release    string
	onPartition                                    partitionQueries
	completeFaults, revivableFaults, readyFaults   string
	deferTasks, nextDue                            string
	scheduleMark, scheduleStart, scheduleMove      string
	reviveSpanReset, reviveSpanRecreate            string
	reviveTasksReset, reviveTasksRecreate          string
	reassign, reassignAll, join                    string
	register, priorIncarnation, heartbeat, owners  string
	silentHolds, ownHolds, expire, expireOwn       string
	silentOwners, activeOwners, purgeOwners        string
	initialize, topics, destroy, truncate, analyze string
	destroyMarks                                   string
	purge, purgeBefore, lookup, knownTopics        string
	page, pageOne                                  [2]string // by Direction; pageOne filters one state
	count                                          [2]string // by Snapshot
	countOne                                       string    // Total, of one state
	results, resolveFollowing, resolvePreceding    string
	ready                                          readyQueries
}

// newQueries returns the queries for the quoted schema, skipping locked rows
// unless exclusive.
func newQueries(schema, plain string, exclusive bool) queries {
	skip := " SKIP LOCKED"
	if exclusive {
		skip = ""
	}
	literal := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	sub := strings.NewReplacer("{schema}", schema, "{sequence}", literal(schema+".task_sequence"), "{skip}", skip,
		"{tickets}", literal(schema+".task_ticket_"), "{bound}", literal(schema+".task_bound_"),
		"{admissionKey}", literal(plain+"."),
		"{silent}", strings.ReplaceAll(silent, "{now}", now), "{now}", now).Replace
	v := func(template string, pairs ...string) string {
		return sub(strings.NewReplacer(pairs...).Replace(template))
	}
	var q queries
	pushes := func(form func(string) string) (push [4]string) {
		push[taskapi.Append] = sub(form(pushInsert))
		push[taskapi.Supersede] = v(form(pushRedundant+pushInsert), "{from}", "1", "{to}", "1")
		push[taskapi.Replace] = v(form(pushRedundant+pushInsert), "{from}", "1", "{to}", "6")
		push[taskapi.Delete] = v(form(pushDelete+pushInsert), "{from}", "1", "{to}", "8")
		return push
	}
	q.push, q.admitted, q.counted = pushes(uncapped.Replace), pushes(admittedPush), pushes(counted.Replace)
	q.pushOne, q.pushOneAlone = sub(uncapped.Replace(pushOne)), sub(pushOneAlone)
	q.admittedOne, q.admittedOneAlone = sub(admittedOne(pushOne)), sub(admittedOneAlone)
	q.pushSequences = sub(uncapped.Replace(pushSequences))
	q.poll, q.pollTermed = pollStatements(v, false)
	q.complete = v(complete, "{match}", matchActive)
	q.completeOwn = sub(completeOwn)
	q.completeOne = sub(completeOne)
	q.release = v(release, "{match}", strings.ReplaceAll(matchActive, "$6", "$4"))
	q.completeFaults = v(faults, "{match}", strings.ReplaceAll(matchActive, "$6", "$3"))
	q.revivableFaults = v(faults, "{match}", matchRevivable)
	q.readyFaults = v(faults, "{match}", matchReady)
	q.deferTasks = v(deferTasks, "{match}", matchReady)
	q.nextDue = sub(nextDue)
	q.scheduleMark, q.scheduleStart, q.scheduleMove = sub(scheduleMark), sub(scheduleStart), sub(scheduleMove)
	q.reviveSpanReset = v(reviveSpan, "{revival}", revivalReset)
	q.reviveSpanRecreate = v(reviveSpan, "{revival}", revivalRecreate)
	q.reviveTasksReset = v(reviveTasks, "{revival}", revivalReset, "{match}", matchRevivable)
	q.reviveTasksRecreate = v(reviveTasks, "{revival}", revivalRecreate, "{match}", matchRevivable)
	q.reassign = v(reassign, "{match}", matchRevivable)
	q.reassignAll, q.join = sub(reassignAll), sub(join)
	q.register, q.priorIncarnation, q.heartbeat, q.owners = sub(register), sub(priorIncarnation), sub(heartbeat), sub(owners)
	q.silentHolds, q.ownHolds, q.expire, q.expireOwn = sub(silentHolds), sub(ownHolds), sub(expire), sub(expireOwn)
	q.silentOwners, q.activeOwners, q.purgeOwners = sub(silentOwners), sub(activeOwners), sub(purgeOwners)
	q.initialize, q.topics, q.destroy, q.truncate, q.analyze = sub(initialize), sub(topics), sub(destroy), sub(truncate), sub(analyze)
	q.destroyMarks = sub(destroyMarks)
	q.purge, q.purgeBefore, q.lookup, q.knownTopics = sub(purge), sub(purgeBefore), sub(lookup), sub(knownTopics)
	q.page[taskapi.Forward] = v(page, "{beyond}", ">", "{direction}", "ASC")
	q.page[taskapi.Backward] = v(page, "{beyond}", "<", "{direction}", "DESC")
	for direction, statement := range q.page {
		q.pageOne[direction] = strings.Replace(statement, "state = ANY ($3::smallint[])", "state = $3::smallint", 1)
	}
	q.count[taskapi.Total] = v(count, "{distinct}", "", "{distinctOrder}", "")
	q.count[taskapi.Recent] = v(count, "{distinct}", "DISTINCT ON (topic, identifier)",
		"{distinctOrder}", "ORDER BY topic, identifier, sequence DESC")
	q.countOne = strings.Replace(q.count[taskapi.Total], "state = ANY ($6::smallint[])", "state = $6::smallint", 1)
	q.results, q.resolveFollowing, q.resolvePreceding = sub(results), sub(resolveFollowing), sub(resolvePreceding)
	q.ready = newReadyQueries(sub)
	q.onPartition = newPartitionQueries(q, v, schema+".task")
	return q
}

// partitionQueries are the statements that run on a topic's partition in
// taskpg's own round trips (see partition.go).
type partitionQueries struct {
	poll, pollTermed      [2][2]partitioned // plain polls, by Order, then unconditional / conditional
	complete, completeOne partitioned
}

func newPartitionQueries(q queries, v func(string, ...string) string, table string) partitionQueries {
	polls, termed := pollStatements(v, true)
	p := partitionQueries{
		complete:    partitionedOf(q.completeOwn, table),
		completeOne: partitionedOf(q.completeOne, table),
	}
	for order := range p.poll {
		for c := range p.poll[order] {
			p.poll[order][c] = partitionedOf(polls[plainPoll][order][c], table)
			p.pollTermed[order][c] = partitionedOf(termed[plainPoll][order][c], table)
		}
	}
	return p
}

// The modes of a poll statement: plain for a topic without limits, limited
// for one with an Active limit alone, keyed for one with a limit per
// identifier (see limits.go).
type pollMode int

const (
	plainPoll pollMode = iota
	limitedPoll
	keyedPoll
)

// pollStatements returns the poll statements of every mode, order and
// condition, without a term and under one, their placeholders filled by v:
// on task, or on a partition (see pruneTask and pollSingular).
func pollStatements(v func(string, ...string) string, onPartition bool) (polls, termed [3][2][2]string) {
	prune, topicOf := pruneTask, strings.NewReplacer("{topicOf:e}", "e.topic = $1 AND ", "{topicOf:b}", "b.topic = $1 AND ")
	if onPartition {
		prune, topicOf = "", strings.NewReplacer("{topicOf:e}", "", "{topicOf:b}", "")
	}
	branch := func(template, which, order, due string) string {
		return strings.NewReplacer("{which}", which, "{order}", order, "{due}", due).Replace(template)
	}
	ready, due := branch(pollBranch, pollReady, pollReadyOrder, ""), branch(pollBranch, pollDue, pollDueOrder, "")
	walkReady := branch(keyedWalk, pollReady, pollReadyOrder, "false")
	walkDue := branch(keyedWalk, pollDue, pollDueOrder, "true")
	take := "(SELECT n FROM take)"
	modes := [3][]string{
		plainPoll: {"{with}", "", "{candidates}", pollCandidates, "{marker}", plainMarker, "{take}", "$3",
			"{ready}", ready, "{due}", due},
		limitedPoll: {"{with}", limitTake, "{candidates}", pollCandidates, "{marker}", limitedMarker,
			"{held}", limitHeld, "{take}", take, "{ready}", ready, "{due}", due},
		keyedPoll: {"{with}", limitTake + keyedWith, "{candidates}", keyedCandidates, "{marker}", limitedMarker,
			"{held}", keyedHeld, "{take}", take, "{ready}", walkReady, "{due}", walkDue},
	}
	active := func(identifier string) string { return strings.ReplaceAll(keyedActive, "{identifier}", identifier) }
	for mode, pairs := range modes {
		// Three times: the candidates bring the branches, which bring {take}.
		r := strings.NewReplacer(pairs...)
		poll := strings.NewReplacer("{activeOf:keyed}", active("keyed.identifier"),
			"{activeOf:r}", active("r.identifier")).Replace(r.Replace(r.Replace(r.Replace(pollTemplate))))
		for _, o := range []struct {
			order                    taskapi.Order
			direction, earlier, last string
		}{{taskapi.FIFO, "ASC", "<", "max"}, {taskapi.LIFO, "DESC", ">", "min"}} {
			singular := topicOf.Replace(strings.ReplaceAll(pollSingular, "{earlier}", o.earlier))
			for c, condition := range []string{"", singular} {
				// The term's number follows the arguments of the poll: $4,
				// or $5 after the blocking states of a conditional poll.
				term := strings.ReplaceAll(pollTerm, "{number}", fmt.Sprintf("$%d", 4+c))
				fill := func(term string) string {
					return v(poll, "{condition}", condition, "{direction}", o.direction, "{earlier}", o.earlier, "{last}", o.last,
						"{prune}", prune, "{term}", term)
				}
				floor := unfloored
				if floorable(pollMode(mode), o.order, c == 1) {
					floor = floored
				}
				polls[mode][o.order][c], termed[mode][o.order][c] = floor.Replace(fill("")), unfloored.Replace(fill(term))
			}
		}
	}
	return polls, termed
}

// The floor of a poll (see floor.go): floorStart, {floor} of the Ready
// branch, starts the walk of the Ready index past the floor ($4), and
// floorMarker reports what moves the floor: the poll's transaction id (none
// when it took no task), the oldest transaction still open at its snapshot,
// and the highest sequence it took from the Ready branch.
const (
	floorStart  = ` AND r.sequence > $4`
	floorMarker = `
UNION ALL
SELECT -3, coalesce(pg_current_xact_id_if_assigned()::text, ''),
       pg_snapshot_xmin(pg_current_snapshot())::text || ' ' ||
       coalesce((SELECT max(sequence) FROM polled WHERE not_before IS NULL), 0)::text`
)

var (
	unfloored = strings.NewReplacer("{floor}", "", "{floorMarker}", "")
	floored   = strings.NewReplacer("{floor}", floorStart, "{floorMarker}", floorMarker)
)

// floorable reports whether the poll statement of mode, order and condition
// (without a term) starts from a floor: the plain FIFO poll without a
// condition, the one a busy consumer sends.
func floorable(mode pollMode, order taskapi.Order, conditional bool) bool {
	return mode == plainPoll && order == taskapi.FIFO && !conditional
}
