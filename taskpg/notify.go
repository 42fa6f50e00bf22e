package taskpg

import "github.com/taskrepo/taskrepo/internal/edge"

// The channels of PostgreSQL's LISTEN/NOTIFY on which the processes that
// share a schema wake each other: pushes of ready tasks notify TasksChannel,
// pushes of deferred tasks DueChannel, each with the topic as payload, and
// activation changes notify ActivationChannel. A notification is a hint:
// consumers poll every pause whatever they hear. taskansi's pushes on
// PostgreSQL notify the same channels.

// TasksChannel returns the channel on which pushes of ready tasks to the
// tables of schema notify, with the topic as payload: "taskrepo_tasks" for
// "public", "taskrepo_tasks_" + schema otherwise. A name over PostgreSQL's
// 63 bytes keeps a prefix of the schema and ends with a hash of the whole.
func TasksChannel(schema string) string { return edge.Channel(edge.TasksBase, schema) }

// DueChannel returns the channel on which pushes of deferred tasks (a
// not-before time, past or to come) to the tables of schema notify, with
// the topic as payload, by the rule of TasksChannel: "taskrepo_due" for
// "public". A consumer woken on it also reads when the topic's next task is
// due; one woken on TasksChannel need not.
func DueChannel(schema string) string { return edge.Channel(edge.DueBase, schema) }

// activationChannel returns the channel on which activation changes of the
// tables of schema notify, by the rule of TasksChannel.
func activationChannel(schema string) string { return edge.Channel(edge.ActivationBase, schema) }
