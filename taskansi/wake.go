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
	// pushTopic and notifyingTopic are the statements by which a push
	// locks its topic's row, the second also notifying the topic's
	// channel: in the push's own transaction or savepoint, so that the
	// notification is delivered when the push commits, never when it
	// rolls back.
	pushTopic, notifyingTopic string
}

// newWakeUps returns the wake-ups of a repository of dialect d whose
// queries are q, on the tables of schema (as given).
func newWakeUps(s settings, d *dialect, q queries, schema string) *wakeUps {
	w := &wakeUps{Edge: edge.New(s.wakeOff || !d.partitioned, s.wakeInterval, s.quiet), pushTopic: q.pushTopic}
	literal := "'" + strings.ReplaceAll(tasksChannel(schema), "'", "''") + "'"
	w.notifyingTopic = strings.Replace(q.pushTopic, topicCheck, topicCheck+" AND pg_notify("+literal+", topic) IS NOT NULL", 1)
	return w
}

// topicCheck is the condition by which a push finds its topic's row; the
// notification is added to it, so that a push to an unknown topic notifies
// nothing.
const topicCheck = "WHERE topic = ?"

// topicStatement returns the statement that locks the topic of a push that
// notifies or not.
func (w *wakeUps) topicStatement(notify bool) string {
	if notify {
		return w.notifyingTopic
	}
	return w.pushTopic
}
