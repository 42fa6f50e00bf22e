// Package lockkey names the locks by which pushes of taskpg and taskansi
// that mark or delete older tasks (Replace, Supersede, Delete) serialize
// each other, and the locks on PostgreSQL by which the transactions that
// hold a term of a topic hold off its next term, so that the two packages
// take the same locks on one database.
//
// A lock is a pair of 32-bit keys: a space that says what kind of lock it is
// and a hash of what it locks. On PostgreSQL they are the two keys of an
// advisory lock; on MySQL the hash picks a row of a lock table.
package lockkey

import (
	"hash/fnv"
	"slices"
)

// The spaces of the keys. Conditional polls use 1952543595 ("task" in ASCII)
// with PostgreSQL's hashtext of the topic; on PostgreSQL, the claims of a
// topic with limits take 1952543598 with hashtext of the schema and topic
// (the trigger of migration 00011), and the counts of pushes into a topic
// with a capacity 1952543599 with the same hash (migrations 00013 and
// 00015, against a change of the capacity);
// the terms of topics take TermSpace, the next.
const (
	// InsertionSpace is the space of a topic's insertion lock: taken shared by a
	// push of few identifiers, exclusive by a push of many.
	InsertionSpace int32 = 1952543596
	// IdentifierSpace is the space of the locks of single identifiers.
	IdentifierSpace int32 = 1952543597
	// TermSpace is the space of a topic's term lock on PostgreSQL: taken
	// shared by every transaction that holds the topic's current term
	// (Leader.Hold), exclusively by a Lead that takes over a term of the
	// topic that is over, which so waits for those transactions to end.
	// PostgreSQL queues the requests of advisory locks in their order, so
	// that neither side starves the other.
	TermSpace int32 = 1952543600
)

// MaxIdentifiers is the most identifier locks one push takes; a push of more
// distinct identifiers takes its topic's insertion lock exclusively instead.
const MaxIdentifiers = 8

// Topic returns the key of the insertion lock of topic in schema.
func Topic(schema, topic string) int32 {
	return hash(schema, topic)
}

// Term returns the key of the term lock of topic in schema (see TermSpace).
// Two topics may share a key; a Lead that takes one of them over then
// waits for the holders of the other's term too.
func Term(schema, topic string) int32 {
	return hash(schema, topic)
}

// Identifiers returns the distinct keys of the locks of identifiers of topic
// in schema, ascending: the order in which they are taken, against
// deadlocks. Two identifiers may share a key; they are then serialized
// together.
func Identifiers(schema, topic string, identifiers []string) []int32 {
	keys := make([]int32, len(identifiers))
	for i, id := range identifiers {
		keys[i] = hash(schema, topic, id)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// hash is FNV-1a of the parts, each followed by a NUL byte, which no name
// contains.
func hash(parts ...string) int32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int32(h.Sum32())
}
