package taskansi

import (
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/internal/edge"
)

// defaultWakeInterval is the interval within which a repository on
// PostgreSQL notifies a topic's channel once (see WithWakeUps), as taskpg's.
const defaultWakeInterval = 2 * time.Millisecond

// wakeUps decides which pushes notify the channel of their topic, on
// PostgreSQL only: the first push of a topic in an interval notifies, the
// others of the interval do not (a leading edge).
type wakeUps struct {
	*edge.Edge
	// pushTopic, notifyingTopic and notifyingDue are the statements by
	// which a push locks its topic's row and reads its capacity (see
	// lockTopic), the others also notifying the
	// channel of the topic's ready tasks or of its deferred ones (named as
	// taskpg.TasksChannel and taskpg.DueChannel name them, so that a
	// taskpg.Notifier hears them): in the push's own transaction or
	// savepoint, so that the notification is delivered when the push
	// commits, never when it rolls back.
	pushTopic, notifyingTopic, notifyingDue string
	// freed notifies the channel of the topic's ready tasks (?) when a
	// completion frees room below the topic's limits (see Repository.freed).
	freed string
	// cancelled notifies the activation channel (taskpg.ActivationChannel)
	// with a topic (?) when a cancellation ended Active tasks of it, so that
	// their owners' runtimes reconcile at once (see Repository.Cancel).
	cancelled string
}

// newWakeUps returns the wake-ups of a repository of dialect d whose
// queries are q, on the tables of schema (as given).
func newWakeUps(s settings, d *dialect, q queries, schema string) *wakeUps {
	w := &wakeUps{Edge: edge.New(s.wakeOff || !d.partitioned, s.wakeInterval, s.quiet), pushTopic: q.pushTopic}
	literal := func(base string) string {
		return "'" + strings.ReplaceAll(edge.Channel(base, schema), "'", "''") + "'"
	}
	notifying := func(base string) string {
		return strings.Replace(q.pushTopic, topicCheck, topicCheck+" AND pg_notify("+literal(base)+", topic) IS NOT NULL", 1)
	}
	w.notifyingTopic, w.notifyingDue = notifying(edge.TasksBase), notifying(edge.DueBase)
	w.freed = "SELECT pg_notify(" + literal(edge.TasksBase) + ", ?)"
	w.cancelled = "SELECT pg_notify(" + literal(edge.ActivationBase) + ", ?)"
	return w
}

// topicCheck is the condition by which a push finds its topic's row; the
// notification is added to it, so that a push to an unknown topic notifies
// nothing.
const topicCheck = "WHERE topic = ?"

// topicStatement returns the statement that locks the topic of a push that
// notifies or not, of deferred tasks or not.
func (w *wakeUps) topicStatement(notify, deferred bool) string {
	switch {
	case notify && deferred:
		return w.notifyingDue
	case notify:
		return w.notifyingTopic
	}
	return w.pushTopic
}
