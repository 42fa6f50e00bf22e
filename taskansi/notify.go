package taskansi

import (
	"fmt"
	"hash/fnv"
	"unicode/utf8"
)

// The channels of PostgreSQL's LISTEN/NOTIFY on which the processes that
// share a schema wake each other, named as package taskpg names them
// (taskpg.TasksChannel): pushes of both packages notify the same channel,
// and a taskpg.Notifier hears them all. SQLite and MySQL have no such
// channel: there, consumers in every process find new tasks and activation
// changes by polling and reconciliation (see PollNotifier).
const (
	tasksChannelBase = "taskrepo_tasks"
	// maxChannelLength is PostgreSQL's limit on channel names
	// (NAMEDATALEN - 1): pg_notify refuses longer ones.
	maxChannelLength = 63
	// channelHashLength is the length of the hash that ends a channel name
	// shortened to fit.
	channelHashLength = 8
)

// tasksChannel returns the channel on which pushes to the tables of schema
// notify, with the topic as payload: "taskrepo_tasks" for "public" (and
// for the connection's own schema, ""), "taskrepo_tasks_" + schema
// otherwise, as taskpg.TasksChannel.
func tasksChannel(schema string) string { return channelName(tasksChannelBase, schema) }

// channelName returns base for the schema "public" and base_schema
// otherwise, shortened to fit maxChannelLength: the schema's prefix, cut at
// a character boundary, then "_" and a hash of the schema. It is taskpg's
// rule.
func channelName(base, schema string) string {
	if schema == "public" || schema == "" {
		return base
	}
	name := base + "_" + schema
	if len(name) <= maxChannelLength {
		return name
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(schema))
	keep := maxChannelLength - len(base) - 2 - channelHashLength
	for keep > 0 && !utf8.RuneStart(schema[keep]) {
		keep--
	}
	return fmt.Sprintf("%s_%s_%0*x", base, schema[:keep], channelHashLength, h.Sum32())
}
