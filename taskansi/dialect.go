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
	now      string // {now}: the current time in UTC, as stored
	ago      string // {ago}: the current time in UTC less ? microseconds
	greatest string // {greatest}: the larger of two values
	// forUpdate ends a SELECT that locks its rows: {wait} waits for rows
	// that others locked, {lock} skips them (SKIP LOCKED is appended unless
	// exclusive). {share} ends a SELECT that keeps a row from being deleted.
	forUpdate, share string
	// {insert} ... {ignore} inserts a row unless its key exists.
	insert, ignore string
	// returning: INSERT ... RETURNING sequence; else the driver's
	// LastInsertId, the first of a multi-row INSERT's consecutive values.
	returning bool
	// writeLock, run first in every transaction or savepoint of the
	// repository's own, takes the database's write lock before anything is
	// read.
	writeLock string
	// pollLock serializes the conditional polls of a topic; its argument is
	// pollKey(quoted schema, topic).
	pollLock string
	pollKey  func(schema, topic string) string
	refresh  string // gathers planner statistics
	// isolation is the isolation level of transactions of the
	// repository's own.
	isolation sql.IsolationLevel
}

// dialects describes every dialect.
var dialects = map[Dialect]*dialect{
	Postgres: {
		name:      "postgres",
		quote:     '"',
		schema:    "public",
		numbered:  true,
		now:       `(now() AT TIME ZONE 'utc')`,
		ago:       `((now() AT TIME ZONE 'utc') - CAST(? AS bigint) * interval '1 microsecond')`,
		greatest:  "GREATEST",
		forUpdate: " FOR UPDATE",
		share:     " FOR KEY SHARE",
		insert:    "INSERT INTO",
		ignore:    " ON CONFLICT DO NOTHING",
		returning: true,
		// The advisory lock of taskpg, on the same key, so that the two
		// packages serialize each other's conditional polls.
		pollLock: `SELECT pg_advisory_xact_lock(1952543595, hashtext(?))`,
		pollKey:  func(schema, topic string) string { return schema + "." + topic },
		refresh:  `ANALYZE {task}`,
	},
	SQLite: {
		name:      "sqlite",
		quote:     '"',
		now:       `(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')`,
		ago:       `(strftime('%Y-%m-%d %H:%M:%f', julianday('now') - ? / 86400000000.0) || '000')`,
		greatest:  "max",
		insert:    "INSERT INTO",
		ignore:    " ON CONFLICT DO NOTHING",
		returning: true,
		// SQLite has one writer at a time and no row locks: a write that
		// comes first takes the write lock (waiting busy_timeout), so that
		// what the transaction reads stays true until it commits.
		writeLock: `UPDATE {topic} SET topic = topic WHERE 0`,
		refresh:   `ANALYZE`,
	},
	MySQL: {
		name:      "mysql",
		quote:     '`',
		now:       `UTC_TIMESTAMP(6)`,
		ago:       `(UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND)`,
		greatest:  "GREATEST",
		forUpdate: " FOR UPDATE",
		share:     " LOCK IN SHARE MODE",
		insert:    "INSERT IGNORE INTO",
		pollLock:  `SELECT topic FROM {topic} WHERE topic = ? FOR UPDATE`,
		pollKey:   func(_, topic string) string { return topic },
		refresh:   `ANALYZE TABLE {task}, {topic}, {owner}`,
		// Under READ COMMITTED every statement sees the latest commits and
		// InnoDB takes no gap locks, which would deadlock with pushes.
		isolation: sql.LevelReadCommitted,
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
