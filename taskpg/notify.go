package taskpg

import (
	"fmt"
	"hash/fnv"
	"unicode/utf8"
)

// The channels of PostgreSQL's LISTEN/NOTIFY on which the processes that
// share a schema wake each other: pushes notify TasksChannel with the topic
// as payload, activation changes notify the activation channel. A
// notification is a hint: consumers poll every pause whatever they hear.
const (
	tasksChannelBase      = "taskrepo_tasks"
	activationChannelBase = "taskrepo_activation"
	// maxChannelLength is PostgreSQL's limit on channel names
	// (NAMEDATALEN - 1): pg_notify refuses longer ones.
	maxChannelLength = 63
	// channelHashLength is the length of the hash that ends a channel name
	// shortened to fit.
	channelHashLength = 8
)

// TasksChannel returns the channel on which pushes to the tables of schema
// notify, with the topic as payload: "taskrepo_tasks" for "public",
// "taskrepo_tasks_" + schema otherwise. A name over PostgreSQL's 63 bytes
// keeps a prefix of the schema and ends with a hash of the whole.
func TasksChannel(schema string) string { return channelName(tasksChannelBase, schema) }

// activationChannel returns the channel on which activation changes of the
// tables of schema notify, by the rule of TasksChannel.
func activationChannel(schema string) string { return channelName(activationChannelBase, schema) }

// channelName returns base for the schema "public" and base_schema
// otherwise, shortened to fit maxChannelLength: the schema's prefix, cut at
// a character boundary, then "_" and a hash of the schema.
func channelName(base, schema string) string {
	if schema == "public" {
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
