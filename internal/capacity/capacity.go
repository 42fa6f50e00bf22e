// Package capacity holds what the backends share of the capacity of topics
// (taskapi.Capacitor): how its bounds are stored in the row of a topic, and
// how a refusal that PostgreSQL's admission raises is read.
package capacity

import (
	"database/sql"
	"math"
	"strconv"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Unbounded is the column capacity of a topic that bounds only the Ready
// tasks of its identifiers: every dialect's pushes admit the tasks of a
// topic whose capacity is not NULL (taskpg's push statements read nothing
// else), and no count reaches it.
const Unbounded int64 = math.MaxInt64

// Columns returns the values of the columns capacity and
// identifier_capacity of a topic with capacity c: nil (NULL) for none.
func Columns(c taskapi.Capacity) (ready, perIdentifier any) {
	switch {
	case c.Ready > 0:
		ready = c.Ready
	case c.PerIdentifier > 0:
		ready = Unbounded
	}
	if c.PerIdentifier > 0 {
		perIdentifier = c.PerIdentifier
	}
	return ready, perIdentifier
}

// Of returns the capacity of a topic whose columns capacity and
// identifier_capacity hold ready and perIdentifier.
func Of(ready, perIdentifier sql.NullInt64) taskapi.Capacity {
	var c taskapi.Capacity
	if ready.Valid && ready.Int64 != Unbounded {
		c.Ready = ready.Int64
	}
	if perIdentifier.Valid {
		c.PerIdentifier = perIdentifier.Int64
	}
	return c
}

// The SQLSTATEs of PostgreSQL's admission (migrations 00010 and 00016):
// the topic's bound refused the push, its DETAIL the capacity and the
// count; an identifier's bound refused it, its DETAIL the capacity, the
// count and the identifier.
const (
	topicRefused      = "TR001"
	identifierRefused = "TR004"
)

// Refused returns the *taskapi.CapacityError of a push into topic that
// PostgreSQL's admission refused with SQLSTATE code and detail, or false
// when they are not a refusal.
func Refused(code, detail, topic string) (*taskapi.CapacityError, bool) {
	var parts int
	switch code {
	case topicRefused:
		parts = 2
	case identifierRefused:
		parts = 3 // the identifier last, spaces and all
	default:
		return nil, false
	}
	figures := strings.SplitN(detail, " ", parts)
	if len(figures) != parts {
		return nil, false
	}
	capacity, cOK := figure(figures[0])
	count, nOK := figure(figures[1])
	if !cOK || !nOK {
		return nil, false
	}
	e := &taskapi.CapacityError{Topic: topic, Capacity: capacity, Count: count}
	if parts == 3 {
		e.Identifier = figures[2]
	}
	return e, true
}

// figure reads a whole number of a DETAIL.
func figure(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
