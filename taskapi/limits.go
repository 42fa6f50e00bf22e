package taskapi

import "context"

// Limits bound the Active tasks of a topic across every process that polls
// it: its concurrency for the whole fleet, where a process's own limiters
// bound only that process. Zero is no limit.
type Limits struct {
	// Active is the most Active tasks of the topic at once.
	Active int64
	// PerIdentifier is the most Active tasks of one identifier of the
	// topic at once: the concurrency of a key, such as a tenant whose
	// tasks carry its name as their identifier. 1 runs an identifier's
	// tasks one at a time, as SingularByIdentifier does, without holding
	// back its later tasks behind an earlier one that a condition blocks.
	PerIdentifier int64
}

// Regulator stores the limits of topics, which every poll obeys: a poll
// marks a task Active only while the topic has fewer Active tasks than its
// Active limit, and the task's identifier fewer than its PerIdentifier
// limit, counting the tasks of every poll committed before and of its own.
// A poll that meets a limit returns fewer tasks, or none; it is not an
// error. Polls of a topic with limits claim their tasks in turn, whatever
// process or repository sends them, so that no interleaving of pollers
// goes over a limit.
//
// Under a PerIdentifier limit, the tasks a poll may take are the earliest
// Ready tasks (in the poll's order) of each identifier below its limit, as
// many as it has room for; a poll never walks over the tasks of
// identifiers at their limit, however many. Tasks that are Active when a
// limit is set or lowered stay Active; the topic takes no more until it is
// below the limit.
type Regulator[Tx any] interface {
	// SetLimits sets the limits of topic; zero Limits removes them.
	// ErrUnknownTopic when topic is not registered; ErrInvalidArgument for
	// a bad topic name or a negative limit. Destroying the topic forgets
	// its limits.
	SetLimits(ctx context.Context, tx Tx, topic string, limits Limits) error
	// Limits returns the limits of every registered topic that has any.
	Limits(ctx context.Context, tx Tx) (map[string]Limits, error)
}

// A LimitNote given to Poll as a PollOption (a *LimitNote) learns whether
// the topic's limits held the poll back: Poll sets Held when the Active
// limit left it less room than it asked for and it took all of that room
// (the topic is at its limit now), or when it passed over a Ready task
// whose identifier was at its limit when the poll began (as far as the
// candidates it read show). A runtime tells its operators of limit
// waits by it. A poll of a topic without limits leaves Held false; a nil
// *LimitNote is ErrInvalidArgument.
type LimitNote struct {
	Held bool
}

func (*LimitNote) pollOption() {}
