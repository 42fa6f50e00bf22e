package taskpg

import (
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/internal/edge"
)

// defaultWakeInterval is the interval within which a repository notifies a
// topic's channel once (see WithWakeUps). NOTIFY serializes the commits that
// notify on a lock of the whole server, held through the commit's flush; at
// most one such commit per topic in this interval leaves the others to
// commit in groups, and a single push costs the same as without wake-ups.
const defaultWakeInterval = 2 * time.Millisecond

// wakeUps decides which pushes notify the channel of their topic, and holds
// the push statements that do: the first push of a topic in an interval
// notifies, the others of the interval do not (a leading edge).
type wakeUps struct {
	*edge.Edge
	// plain is the push statements without a notification; notifying and
	// notifyingDue notify TasksChannel and DueChannel.
	plain, notifying, notifyingDue pushStatements
}

// pushStatements are the statements of Push. The notifying ones call
// pg_notify in the statement that stores the tasks (or that draws their
// sequences, for COPY): the notification goes in the same round trip and
// is delivered when the push's transaction commits, never when it rolls
// back.
type pushStatements struct {
	push                  [4]string // by Insertion
	admitted, counted     [4]string // by Insertion, into a topic with a capacity (see admit)
	pushOne, pushOneAlone string
	pushSequences         string
	admittedOne           string // pushOne into a topic with a capacity
	admittedOneAlone      string // pushOneAlone into a topic with a capacity
}

// newWakeUps returns the wake-ups of a repository whose queries are q, on
// the tables of schema (as given).
func newWakeUps(s settings, q queries, schema string) *wakeUps {
	w := &wakeUps{Edge: edge.New(s.wakeOff, s.wakeInterval, s.quiet)}
	w.plain = pushStatements{push: q.push, admitted: q.admitted, counted: q.counted, pushOne: q.pushOne, pushOneAlone: q.pushOneAlone,
		pushSequences: q.pushSequences, admittedOne: q.admittedOne, admittedOneAlone: q.admittedOneAlone}
	w.notifying = w.plain.notifying(TasksChannel(schema))
	w.notifyingDue = w.plain.notifying(DueChannel(schema))
	return w
}

// notifying returns the statements of p that also notify channel.
func (p pushStatements) notifying(channel string) pushStatements {
	notify := notifying(channel)
	var n pushStatements
	for i := range p.push {
		n.push[i], n.admitted[i], n.counted[i] = notify(p.push[i]), notify(p.admitted[i]), notify(p.counted[i])
	}
	// pushOneAlone has no topic check to hang the notification on: the
	// notifying push of one task checks the topic as pushOne does, which
	// costs little at one push per topic and interval.
	n.pushOne = notify(p.pushOne)
	n.pushOneAlone = n.pushOne
	n.admittedOneAlone = notify(p.admittedOne)
	n.pushSequences, n.admittedOne = notify(p.pushSequences), notify(p.admittedOne)
	return n
}

// topicCheck is the condition by which every push statement finds its
// topic's row (the topic itself is $1); notifying adds the notification to
// it, so that a push to an unknown topic notifies nothing.
const topicCheck = ".task_topic WHERE topic = $1"

// notifying returns a function that turns a push statement into one that
// also notifies channel with the topic, once, when the topic exists.
func notifying(channel string) func(statement string) string {
	literal := "'" + strings.ReplaceAll(channel, "'", "''") + "'"
	return func(statement string) string {
		return strings.Replace(statement, topicCheck, topicCheck+" AND pg_notify("+literal+", topic) IS NOT NULL", 1)
	}
}

// statements returns the push statements of a push that notifies or not,
// of deferred tasks or not.
func (w *wakeUps) statements(notify, deferred bool) *pushStatements {
	switch {
	case notify && deferred:
		return &w.notifyingDue
	case notify:
		return &w.notifying
	}
	return &w.plain
}
