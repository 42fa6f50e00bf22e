package taskansi

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect names the SQL dialect of the database behind a DB.
type Dialect int

// The supported dialects.
const (
	// Postgres is PostgreSQL through database/sql (for instance pgx's
	// stdlib), on the partitioned schema of migrations.Postgres; it
	// interoperates with package taskpg on the same tables.
	Postgres Dialect = iota + 1
	// SQLite is SQLite through modernc.org/sqlite, on migrations.SQLite.
	SQLite
	// MySQL is MySQL 8 or MariaDB 10.6 or newer through
	// github.com/go-sql-driver/mysql, on migrations.MySQL.
	MySQL
)

// String returns the name of d.
func (d Dialect) String() string {
	if spec, ok := dialects[d]; ok {
		return spec.name
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// dialect is everything that differs between the SQL of the databases. The
// statements of queries.go are written once with the tokens below in braces;
// New substitutes them. What the three share is not here: LIMIT ? for row
// limits, the SAVEPOINT statements (tx.go), and the text layout of times
// passed as parameters (times.go).
type dialect struct {
	name   string
	quote  byte   // quotes identifiers
	schema string // the default schema; empty: the connection's own
	// numbered rewrites the ? placeholders to $1, $2, ...
	numbered bool
	// now ({now}) is the moment of the statement in UTC, as stored; ago
	// ({ago}) is that moment less a duration. Where they are "?", the
	// moment comes from the process (see clock.go).
	now, ago string
	greatest string // {greatest}: the larger of two values
	// forUpdate ends a SELECT that locks its rows: {wait} waits for rows
	// that others locked, {lock} skips them (SKIP LOCKED is appended unless
	// exclusive). {keep} ends a SELECT that keeps a row from changing
	// until the transaction ends (none on SQLite, whose single writer
	// keeps every row).
	forUpdate, keep string
	// primary ({primary}) makes a SELECT or UPDATE that names tasks by
	// sequence read the primary key, and only the rows it names;
	// deleteFrom ({deleteFrom}) does the same for a DELETE.
	primary, deleteFrom string
	// dueIndex ({dueIndex}) makes both branches of a poll (see
	// pollCandidates) read the index by state and time where indexes are
	// not partial (MySQL's task_due), never one by state and sequence,
	// which would walk over the tasks that wait for their time.
	dueIndex string
	// keyedIndex ({keyedIndex}) makes the statements of a poll under
	// limits that read a topic's tasks by state and identifier read
	// task_keyed where the planner would walk another index (MySQL).
	keyedIndex string
	// keyedRanges: the statements of a poll under limits read the keyed
	// index by ranges of (identifier, state) in the index's order (see
	// keyedTokens), so that no other index serves them (PostgreSQL).
	keyedRanges bool
	// dueOf ({due:r}) is the condition that a Ready task r is due in an
	// identifier's candidates (see limitsBranch). On PostgreSQL it is
	// written with coalesce, which no partial index's predicate matches:
	// "not_before IS NULL OR ..." let the planner, without statistics,
	// read the whole ready and deferred indexes by a BitmapOr for each
	// identifier (7,956 pages for a poll of 5), rather than the keyed
	// index's range of the identifier.
	dueOf string
	// limitedPlans: a poll under limits runs with bitmap scans and JIT
	// off (PostgreSQL; see plannedLimits).
	limitedPlans bool
	// groupedKeys: the identifiers of a topic's Ready tasks are read by
	// GROUP BY, which the dialect reads by a loose index scan (MySQL; see
	// limitsGroups), rather than by a recursive loose scan.
	groupedKeys bool
	// {insert} ... {ignore} inserts a row unless its key exists.
	insert, ignore string
	// returning: INSERT ... RETURNING sequence; else the driver's
	// LastInsertId, the first of a multi-row INSERT's consecutive values.
	returning bool
	// writeLock, run first in every transaction or savepoint of the
	// repository's own, takes the database's write lock before anything is
	// read.
	writeLock string
	// locks tells how pushes of identifiers and conditional polls of a
	// topic take their turns: advisoryLocks (PostgreSQL, with taskpg's
	// keys), lockRows (rows of task_lock), or none (one writer at a time).
	locks lockKind
	// partitioned: a partition per topic (PostgreSQL). Polls record their
	// owner's holds, and calls that span topics read a few dozen topics at
	// a time (see span.go).
	partitioned bool
	// points: a locking read names tasks one by one (sequence IN (...)),
	// never by range, so that InnoDB locks the rows and no gap between
	// them, also under REPEATABLE READ.
	points  bool
	refresh string // gathers planner statistics
	// refreshCommits: refresh commits the transaction it runs in (MySQL's
	// ANALYZE TABLE), so Refresh refuses a caller's transaction.
	refreshCommits bool
	// afterConflict tells a caller what became of its transaction when a
	// call in it failed with ErrConflict.
	afterConflict string
	// isolation is the isolation level of transactions of the
	// repository's own.
	isolation sql.IsolationLevel
	// admission is how a push into a topic with a capacity is admitted
	// (see capacity.go).
	admission admissionKind
}

// lockKind is how a dialect serializes pushes of identifiers and
// conditional polls.
type lockKind int

const (
	noLocks       lockKind = iota // one writer at a time: nothing to do
	advisoryLocks                 // PostgreSQL's advisory locks
	lockRows                      // rows of the task_lock table
)

// admissionKind is how a dialect admits the pushes into a topic with a
// capacity: after its insert, in its transaction, each push is checked
// against the topic's Ready tasks by a count that sees every push admitted
// before it, the pushes of the topic taking turns where the count needs
// them to.
type admissionKind int

const (
	// admitAlone: one writer at a time takes the turns (SQLite).
	admitAlone admissionKind = iota
	// admitFunction: the schema's task_take admits, as for taskpg, with
	// taskrepo.admitting on for the insert, which the trigger of a capped
	// topic's partition asks for (PostgreSQL, migrations 00010 and 00013).
	admitFunction
	// admitTopicRow: the pushes lock the topic's row exclusively (MySQL).
	admitTopicRow
)

// dialects describes every dialect.
var dialects = map[Dialect]*dialect{
	Postgres: {
		name:        "postgres",
		quote:       '"',
		schema:      "public",
		numbered:    true,
		now:         `(statement_timestamp() AT TIME ZONE 'utc')`,
		ago:         `((statement_timestamp() AT TIME ZONE 'utc') - CAST(? AS bigint) * interval '1 microsecond')`,
		greatest:    "GREATEST",
		forUpdate:   " FOR UPDATE",
		keep:        " FOR SHARE",
		deleteFrom:  "FROM {task}",
		insert:      "INSERT INTO",
		ignore:      " ON CONFLICT DO NOTHING",
		returning:   true,
		locks:       advisoryLocks,
		partitioned: true,
		// The partitions of the topics ({list}), through the schema's
		// function, which has the right to analyze them.
		refresh:       `SELECT {analyze}(CAST(ARRAY[{list}] AS text[]))`,
		afterConflict: "the transaction is aborted: roll it back and run it again",
		admission:     admitFunction,
		// Polls under limits read the keyed index by its ranges (see
		// dueOf, keyedRanges and limitedPlans).
		dueOf:        `coalesce(r.not_before, '-infinity') <= {now}`,
		keyedRanges:  true,
		limitedPlans: true,
	},
	SQLite: {
		admission:  admitAlone,
		name:       "sqlite",
		quote:      '"',
		now:        `?`,
		ago:        `?`,
		greatest:   "max",
		deleteFrom: "FROM {task}",
		insert:     "INSERT INTO",
		ignore:     " ON CONFLICT DO NOTHING",
		returning:  true,
		// SQLite has one writer at a time and no row locks: a write that
		// comes first takes the write lock (waiting busy_timeout), so that
		// what the transaction reads stays true until it commits.
		writeLock: `UPDATE {topic} SET topic = topic WHERE 0`,
		refresh:   `ANALYZE`,
		// The statement failed, the transaction goes on, but another
		// holds the write lock.
		afterConflict: "roll the transaction back and run it again",
		dueOf:         `(r.not_before IS NULL OR r.not_before <= {now})`,
	},
	MySQL: {
		name:           "mysql",
		quote:          '`',
		now:            `UTC_TIMESTAMP(6)`,
		ago:            `(UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND)`,
		greatest:       "GREATEST",
		forUpdate:      " FOR UPDATE",
		keep:           " LOCK IN SHARE MODE",
		primary:        " FORCE INDEX (PRIMARY)",
		dueIndex:       " FORCE INDEX (task_due)",
		keyedIndex:     " FORCE INDEX (task_keyed)",
		groupedKeys:    true,
		dueOf:          `(r.not_before IS NULL OR r.not_before <= {now})`,
		deleteFrom:     "t FROM {task} AS t FORCE INDEX (PRIMARY)", // a DELETE of one table takes no index hint
		insert:         "INSERT IGNORE INTO",
		locks:          lockRows,
		points:         true,
		refresh:        `ANALYZE TABLE {task}, {topic}, {owner}`,
		refreshCommits: true,
		// InnoDB rolls back the whole transaction on a deadlock, and the
		// statement alone on a lock wait timeout.
		afterConflict: "a deadlock rolled the transaction back, a lock wait timeout its last statement: roll it back and run it again",
		// Under READ COMMITTED every statement sees the latest commits and
		// InnoDB takes no gap locks, which would deadlock with pushes.
		isolation: sql.LevelReadCommitted,
		admission: admitTopicRow,
	},
}

// quoteIdentifier quotes an identifier for d.
func (d *dialect) quoteIdentifier(name string) string {
	q := string(d.quote)
	return q + strings.ReplaceAll(name, q, q+q) + q
}

// bind rewrites the ? placeholders of query for d.
func (d *dialect) bind(query string) string {
	if !d.numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lookupDialect returns the description of d.
func lookupDialect(d Dialect) (*dialect, error) {
	spec, ok := dialects[d]
	if !ok {
		return nil, fmt.Errorf("%v is not defined", d)
	}
	return spec, nil
}
