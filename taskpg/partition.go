package taskpg

import (
	"crypto/md5"
	"encoding/hex"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The statements of a task's everyday life (the plain poll, the
// completions) name the topic's partition rather than the table task when
// they run in a round trip of taskpg's own, prepared (see prepare.go), and
// they run from a generic plan: the server plans each once per connection,
// where planning it for every call cost more than running it at everyday
// rates (docs/performance.md). On task, a generic plan would lock every
// partition at every call; on the partition it locks and reads that
// partition alone. Left to choose (plan_cache_mode = auto), the server
// kept planning the completion of a few tasks for its arguments, whose
// arrays it can size only then.
//
// A generic plan fits the partition as it was when the server made it, and
// it keeps it, however the partition grows, until the partition's
// statistics change. So these round trips turn sequential and bitmap scans
// off, and jit with them (setGenericPlans), and the statements give the
// planner no index but the one that fits: the update of a poll reaches
// its rows by their addresses alone, and the probes of a conditional poll
// by the identifier index alone (pruneTask, pollSingular). So a plan made
// on a partition of ten tasks is the one for a million
// (TestHotStatementsStayOnTheirIndexes checks every statement of
// partitionQueries with its plan made on an empty partition).
//
// A topic that was never initialized has no partition; its calls run on
// task, as every call inside a caller's transaction does, where an unknown
// table would abort the caller's transaction.

// setGenericPlans, until the end of the round trip's implicit
// transaction, has the server plan the round trip's statements generic
// and turns off the scans that read a whole partition or a whole range,
// and jit, which no plan of these statements needs.
const setGenericPlans = `
SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
       set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true)`

// partitionToken stands for the topic's partition in a partitioned
// statement.
const partitionToken = "{partition}"

// partitioned is a statement whose references to the table task name
// partitionToken instead.
type partitioned string

// partitionedOf returns sql with every reference to table, the quoted
// schema's table task, made partitionToken.
func partitionedOf(sql, table string) partitioned {
	var b strings.Builder
	for {
		i := strings.Index(sql, table)
		if i < 0 {
			b.WriteString(sql)
			return partitioned(b.String())
		}
		end := i + len(table)
		b.WriteString(sql[:i])
		if end < len(sql) && identifierByte(sql[end]) { // task_owner and the like
			b.WriteString(table)
		} else {
			b.WriteString(partitionToken)
		}
		sql = sql[end:]
	}
}

func identifierByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// on returns the statement on topic's partition in schema (quoted).
func (p partitioned) on(schema, topic string) string {
	return strings.ReplaceAll(string(p), partitionToken, schema+"."+pgx.Identifier{partitionName(topic)}.Sanitize())
}

// partitionName returns the name of topic's partition, as the schema's
// trigger names it.
func partitionName(topic string) string {
	sum := md5.Sum([]byte(topic))
	return "task_" + hex.EncodeToString(sum[:])
}

// onTopic runs run with the statement of a call on topic: on the topic's
// partition (generic true) where db is a round trip of taskpg's own, and
// on task otherwise, or when the topic has no partition. A partition
// carries task's grants (migration 00017), but a role granted task after
// the partition was made, and before its owner ran
// task_grant_partitions(), is refused it (a statement on task checks
// task's grants alone): from then on the repository sends its statements
// on task, planned per call.
func (r *Repository) onTopic(db DB, topic, onTask string, onPartition partitioned, run func(sql string, generic bool) error) error {
	if scopeOf(db) == own && !r.partitionsDenied.Load() {
		err := run(onPartition.on(r.schema, topic), true)
		switch {
		case isCode(err, "42501"): // insufficient_privilege
			r.partitionsDenied.Store(true)
		case !isCode(err, "42P01"): // undefined_table: a topic never initialized
			return err
		}
	}
	return run(onTask, false)
}
