package taskapi

import (
	"context"
	"time"
)

// Activation says what the consumers of a topic do. Its ordinal is stored in
// the database.
type Activation int

// The activations; a topic with no stored activation runs.
const (
	Running  Activation = iota // consumers claim tasks (a topic with no stored activation runs)
	Paused                     // consumers claim no task; what they hold goes on
	Draining                   // consumers claim no task and finish what they hold
)

var activationNames = []string{"RUNNING", "PAUSED", "DRAINING"}

// String returns the upper-case name of the activation, such as "PAUSED".
func (a Activation) String() string { return enumName(activationNames, "Activation", a) }

// Valid reports whether a is a defined activation.
func (a Activation) Valid() bool { return a >= Running && a <= Draining }

// ParseActivation parses an activation name such as "DRAINING" (case-insensitive).
func ParseActivation(s string) (Activation, error) {
	return parseEnum[Activation](activationNames, "activation", s)
}

// Activator stores the activation of topics, shared by every process.
type Activator[Tx any] interface {
	// SetActivation stores the activation of topic; ErrUnknownTopic when
	// topic is not registered; ErrInvalidArgument for a bad topic name or
	// activation. Destroying the topic forgets its activation.
	SetActivation(ctx context.Context, tx Tx, topic string, activation Activation) error
	// Activations returns the stored activation of every registered topic
	// that has one; a topic that has none runs.
	Activations(ctx context.Context, tx Tx) (map[string]Activation, error)
}

// A Term is a lease on leading a topic, issued by the database.
type Term struct {
	Topic  string
	Owner  string
	Number int64 // grows with every new leader of the topic, from 1
	// Expires is the end of the term on the database clock, in UTC.
	Expires time.Time
	// Left is how long the term had left at the moment of the statement
	// that issued or renewed it (database clock): a caller that measures
	// from before its call never outlives the term.
	Left time.Duration
}

// Leader issues, renews and holds terms: one owner at a time leads a topic
// (polls it alone, say). Every decision is taken by the database, on its
// clock, so that two owners never hold current terms of one topic. ttl is at
// least a millisecond (else ErrInvalidArgument) and counts in whole
// microseconds. Inside a caller's transaction a term exists once the
// transaction commits.
type Leader[Tx any] interface {
	// Lead makes this owner the leader of topic for ttl when no term is
	// current (none, or the last expired on the database clock): a new
	// term with the next Number. It returns this owner's current term
	// unchanged when it leads already; ok is false, with the current
	// leader's term, when another owner leads. A term that is over is
	// taken over once the transactions that poll under it or hold it (see
	// Hold) have ended. ErrUnknownTopic when topic is not registered.
	// Destroying the topic ends its terms, and its Numbers start again
	// from 1.
	Lead(ctx context.Context, tx Tx, topic string, ttl time.Duration) (term Term, ok bool, err error)
	// Renew extends term to ttl from now if it is still current: this
	// owner's, with the same Number, and not expired. A renewal never
	// shortens a term (one that ends later already stays as it is), so
	// that what every earlier call returned stays true. ok is false
	// otherwise, with the zero Term, and nothing changes.
	Renew(ctx context.Context, tx Tx, term Term, ttl time.Duration) (Term, bool, error)
	// Concede ends term at once if it is still current, so that another
	// owner may lead; otherwise it does nothing.
	Concede(ctx context.Context, tx Tx, term Term) error
	// Hold reports whether term is still current in tx: this owner's term
	// of term.Topic, with the topic's current Number, not expired and not
	// conceded, on the database clock of the statement. While it is, no
	// new term of the topic begins before tx ends: a Lead that would take
	// the topic over (the term expired meanwhile, or the database's clock
	// stepped past it) waits for tx, as it waits for a poll under the
	// term, and then finds the term over. So what tx writes commits only
	// while the term is current when Hold is the last statement before the
	// commit: an exclusive consumer ends every transaction that settles
	// the work of its term with Hold, and rolls it back when Hold reports
	// false. Hold changes nothing, and transactions that hold a term at
	// once, however many, keep neither the owner's Renew nor another
	// owner's Lead waiting for more than those that held it before them
	// (on a database of one writer at a time, such as SQLite, the
	// transactions take turns as its writers do, whatever Hold does).
	// On a handle that runs each call in a transaction of its own (a
	// pool) Hold only reports. It is false, with no error, for a term that
	// is not current and for a topic that was never led or is not
	// registered; ErrInvalidArgument for a term of another owner, a Number
	// below one or a bad topic name.
	Hold(ctx context.Context, tx Tx, term Term) (bool, error)
}

// Clock reads the database's clock, which every time of the contract
// (created, completed, NotBefore, heartbeats, terms) is on. A consumer
// runtime measures how far its process's clock is from it, so that it waits
// for the database's times on the database's clock.
type Clock[Tx any] interface {
	// Now returns the database's current time at the statement, in UTC, to
	// the microsecond.
	Now(ctx context.Context, tx Tx) (time.Time, error)
}
