// Package auditlog holds the statements of the audit log (taskapi.Auditor),
// written once for taskpg and taskansi: {audit} stands for the table,
// {now} for the dialect's moment of the statement, and ? for the
// parameters (Numbered turns them into $1, $2, ... for pgx).
package auditlog

import (
	"math"
	"strconv"
	"strings"
)

// Columns are the columns of an entry, in the order of the fields of
// taskapi.AuditEntry, as Page returns them.
const Columns = `id, at, actor, origin, action, params, bound, changed, outcome`

// Insert records an entry. Arguments: actor, origin, action, params,
// bound, changed, outcome, after the moment where {now} is a parameter.
// Returning ends it where the database returns the row's id and time
// (PostgreSQL, SQLite); elsewhere (MySQL) the driver's LastInsertId and
// At, in the same transaction, read them.
const (
	Insert = `INSERT INTO {audit} (at, actor, origin, action, params, bound, changed, outcome)
VALUES ({now}, ?, ?, ?, ?, ?, ?, ?)`
	Returning = ` RETURNING id, at`
	At        = `SELECT at FROM {audit} WHERE id = ?`
)

// Page reads up to a number of entries below an id, newest first, on the
// primary key read backwards. Arguments: Cursor(before), the limit.
const Page = `SELECT ` + Columns + ` FROM {audit} WHERE id < ? ORDER BY id DESC LIMIT ?`

// Cursor is the id below which Page reads for the cursor before of
// AuditLog: every entry for zero.
func Cursor(before int64) int64 {
	if before == 0 {
		return math.MaxInt64
	}
	return before
}

// Numbered rewrites the ? placeholders of query to $1, $2, ...; the
// statements here hold no ? in any other place.
func Numbered(query string) string {
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
