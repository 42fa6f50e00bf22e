package taskpg

import (
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// READY tasks sit in two partial indexes (see migrations/postgres 00005):
// task_ready (topic, sequence) holds those never deferred, task_deferred
// (topic, not_before, sequence) the deferred ones. A filter on READY alone
// names the two halves apart, so that Page walks task_ready in sequence
// order and Count counts the two indexes, instead of walking or scanning
// every task of the topic: in a topic of a million finished tasks the
// READY ones are found at once. (The deferred half is read whole and
// sorted: deferred tasks are few next to the others, and a poll never
// reads them this way.)
const (
	readyColumns = `sequence, identifier, input, state, descent, owner, reference, output, created, completed, not_before, revivals`
	// Arguments: topic, cursor, reference, identifier, size.
	readyPageHalf = `
(SELECT ` + readyColumns + ` FROM {schema}.task
 WHERE topic = $1 AND sequence {beyond} $2 AND state = 1 AND not_before {half}
   AND ($3::text = '' OR reference = $3) AND ($4::text = '' OR identifier = $4)
 ORDER BY sequence {direction} LIMIT $5)`
	readyPage = `
SELECT ` + infoColumns + ` FROM (` + readyPageHalf + ` UNION ALL ` + readyPageHalf + `) AS task
ORDER BY sequence {direction} LIMIT $5`
	// Arguments: topics, from, to, reference, identifier.
	readyCountHalf = `
SELECT topic, count(*) AS n, max(sequence) AS bound FROM {schema}.task
WHERE topic = ANY ($1::text[]) AND sequence BETWEEN $2 AND $3 AND state = 1 AND not_before {half}
  AND ($4::text = '' OR reference = $4) AND ($5::text = '' OR identifier = $5)
GROUP BY topic`
	readyCount = `
SELECT topic, 1::smallint, sum(n)::bigint, max(bound)
FROM (` + readyCountHalf + ` UNION ALL ` + readyCountHalf + `) AS ready
GROUP BY topic`
)

// readyQueries are the statements of a filter on READY alone.
type readyQueries struct {
	page  [2]string // by Direction
	count string
}

// newReadyQueries fills the templates with sub, which substitutes the
// schema.
func newReadyQueries(sub func(string) string) readyQueries {
	halves := func(template string) string {
		first := strings.Replace(template, "{half}", "IS NULL", 1)
		return sub(strings.Replace(first, "{half}", "IS NOT NULL", 1))
	}
	var q readyQueries
	for direction, v := range map[taskapi.Direction][2]string{taskapi.Forward: {">", "ASC"}, taskapi.Backward: {"<", "DESC"}} {
		q.page[direction] = strings.NewReplacer("{beyond}", v[0], "{direction}", v[1]).Replace(halves(readyPage))
	}
	q.count = halves(readyCount)
	return q
}

// readyOnly reports whether a state filter keeps READY tasks alone.
func readyOnly(states []taskapi.State) bool {
	return len(states) > 0 && !slices.ContainsFunc(states, func(s taskapi.State) bool { return s != taskapi.Ready })
}
