package taskapi

import "context"

// Search names the tasks Find returns by how their names begin. An empty
// prefix filters nothing; at least one must be given.
type Search struct {
	// Identifier is a prefix of the identifier, matched byte for byte
	// (case and LIKE's wildcards % and _ included).
	Identifier string
	// Reference is a prefix of the reference, matched the same way; a task
	// without a reference never matches a non-empty one.
	Reference string
}

// Finder finds the tasks of a topic whose identifier or reference begins
// with a prefix: an operator's search for a task whose name is only
// partly known. (An addition to the original contract; taskpg's and
// taskansi's repositories implement it.)
type Finder[Tx any] interface {
	// Find lists up to size tasks of topic that match search, newest
	// first: sequences below cursor (MaxSequence: from the newest),
	// descending. A search without any prefix, or with a prefix that is no
	// valid name (over-long, invalid UTF-8, a NUL byte), is
	// ErrInvalidArgument. Like Page, it returns nothing for an unregistered
	// topic, a size below one or a cursor at or below Inception.
	Find(ctx context.Context, tx Tx, topic string, search Search, cursor int64, size int) ([]Info, error)
}
