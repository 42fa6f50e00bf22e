package edge

import (
	"fmt"
	"hash/fnv"
	"unicode/utf8"
)

// The bases of the names of the channels of PostgreSQL's LISTEN/NOTIFY on
// which the processes that share a schema wake each other, the same for
// taskpg and taskansi: pushes of ready tasks notify TasksBase, pushes of
// deferred tasks (a not-before time) DueBase, each with the topic as
// payload, and activation changes ActivationBase.
const (
	TasksBase      = "taskrepo_tasks"
	DueBase        = "taskrepo_due"
	ActivationBase = "taskrepo_activation"
	// maxChannelLength is PostgreSQL's limit on channel names
	// (NAMEDATALEN - 1): pg_notify refuses longer ones.
	maxChannelLength = 63
	// channelHashLength is the length of the hash that ends a channel name
	// shortened to fit.
	channelHashLength = 8
)

// Channel returns the name of the channel of base for the tables of schema:
// base for "public" (and for "", a connection's own schema), base_schema
// otherwise, shortened to fit PostgreSQL's 63 bytes: the schema's prefix,
// cut at a character boundary, then "_" and a hash of the whole schema.
func Channel(base, schema string) string {
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
