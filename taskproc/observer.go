package taskproc

import (
	"context"
	"log/slog"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// EventKind says what happened.
type EventKind int

// The kinds of events.
const (
	// EventPolled: a poll returned a batch (Tasks).
	EventPolled EventKind = iota + 1
	// EventDispatched: the batch was handed to the handler.
	EventDispatched
	// EventCompleted: the batch was completed with Decisions.
	EventCompleted
	// EventFailed: the batch was failed with Err; Tasks are those whose
	// Failure was written. With no Tasks, Err says that the batch was
	// given up and its settlement could not be written: its tasks are
	// given back as Ready once the database answers again.
	EventFailed
	// EventReleased: the tasks of the batch (Tasks) went back to Ready
	// unprocessed: the handler released them, or the runtime gave the batch
	// up (Err says why: a stop that ran out of time, a lost term, a topic
	// that stopped claiming while it was polled).
	EventReleased
	// EventEmpty: a poll found nothing.
	EventEmpty
	// EventPollFailed: a poll failed with Err; the loop backs off.
	EventPollFailed
	// EventFatal: the loop died of Err and reports itself inactive.
	EventFatal
	// EventWoken: the loop was woken (Resume) while it waited.
	EventWoken
	// EventHeartbeatFailed: a Client's heartbeat failed with Err.
	EventHeartbeatFailed
	// EventAbandoned: a fenced owner gave up the batch (Tasks) without a
	// write; its tasks stay Active until another process expires them.
	EventAbandoned
	// EventFenced: the owner (Owner) could not confirm its heartbeat for
	// longer than the expiry (Err says why): its Managers stopped claiming
	// and gave up their batches.
	EventFenced
	// EventRecovered: the database answered again and the runtime goes on
	// as Owner, the successor of the fenced owner.
	EventRecovered
	// EventMaintenanceFailed: an expiry, revival or purge of the keeper
	// failed with Err.
	EventMaintenanceFailed
	// EventActivated: the topic's Activation changed (from the database:
	// at start, a notification or a reconciliation).
	EventActivated
	// EventLeading: this owner leads the topic for Term (WithLeadership).
	EventLeading
	// EventConceded: this owner stopped leading the topic (Term; Err says
	// why when a renewal failed).
	EventConceded
	// EventNotifierLost: the Notifier met Err (a dropped connection, say);
	// it reconnects, and every Manager is woken once it has.
	EventNotifierLost
	// EventReconcileFailed: reading the activations, or the cancelled tasks
	// in flight, failed with Err.
	EventReconcileFailed
	// EventScheduled: a Schedule pushed the tasks (Tasks) of its periods.
	EventScheduled
	// EventScheduleFailed: a Schedule's push failed with Err; it tries
	// again soon.
	EventScheduleFailed
	// EventSettleRetried: writing the settlement of a batch (Tasks, those
	// still held) failed with Err, a failure of the database; what it
	// wrote is read back, and it is tried again after Duration.
	EventSettleRetried
	// EventLost: another owner took every task of the batch before its
	// settlement was written (they were expired, say); nothing was
	// written, and the settlement returned an error that says so.
	EventLost
	// EventRescued: the keeper revived expired tasks of the topic (Tasks),
	// whose owner stopped sending heartbeats while they ran.
	EventRescued
	// EventPoisoned: the keeper ended expired tasks of the topic (Tasks)
	// with Failure instead of rescuing them once more (WithRescues).
	EventPoisoned
	// EventLimited: the topic's limits across the fleet held a poll back
	// (taskapi.LimitNote): the topic was at its Active limit, or an
	// identifier at its limit had Ready tasks. Tasks are what the poll
	// took, if any; the loop waits its pause, or a wake-up, when it took
	// none.
	EventLimited
	// EventCancelled: tasks of a batch in flight (Tasks) were cancelled
	// (taskapi.Canceller): the contexts they are decided on end with a
	// cause that wraps taskapi.ErrCancelled, and nothing is written for
	// them. With no Tasks: a batch all of whose tasks were cancelled ended
	// without a write.
	EventCancelled
)

var eventNames = map[EventKind]string{
	EventPolled: "batch polled", EventDispatched: "batch dispatched", EventCompleted: "batch completed",
	EventFailed: "batch failed", EventReleased: "batch released", EventEmpty: "poll found nothing",
	EventPollFailed: "poll failed", EventFatal: "loop died", EventWoken: "loop woken",
	EventHeartbeatFailed: "heartbeat failed", EventAbandoned: "batch abandoned",
	EventFenced: "owner fenced", EventRecovered: "owner recovered", EventMaintenanceFailed: "maintenance failed",
	EventActivated: "topic activation changed", EventLeading: "leading", EventConceded: "conceded",
	EventNotifierLost: "notifier lost", EventReconcileFailed: "reconciliation failed",
	EventScheduled: "periods pushed", EventScheduleFailed: "schedule failed",
	EventSettleRetried: "settlement retried", EventLost: "batch lost",
	EventRescued: "tasks rescued", EventPoisoned: "poison tasks failed", EventLimited: "poll held by limits",
	EventCancelled: "tasks cancelled",
}

// String returns the name of k.
func (k EventKind) String() string {
	if name, ok := eventNames[k]; ok {
		return name
	}
	return "unknown"
}

// An Event is something that happened in the runtime.
type Event struct {
	Kind  EventKind
	Topic string
	Owner string // EventFenced, EventRecovered
	// Activation is the topic's activation (EventActivated).
	Activation taskapi.Activation
	// Term is the term of leadership (EventLeading, EventConceded).
	Term      taskapi.Term
	Tasks     []taskapi.Task // the batch's tasks, in poll order
	Decisions Decisions      // EventCompleted
	Err       error          // EventFailed, EventPollFailed, EventFatal, EventHeartbeatFailed
	// Duration is how long the batch took from its poll to its settlement
	// (EventCompleted, EventFailed, EventReleased), or how long the loop
	// backs off after a failed poll (EventPollFailed).
	Duration time.Duration
}

// An Observer is told of the runtime's events, synchronously, from the
// runtime's goroutines: it must return quickly and be safe for concurrent
// use. A panic in it is logged and otherwise ignored.
type Observer interface {
	Observe(e Event)
}

// ObserverFunc is a function that is an Observer.
type ObserverFunc func(e Event)

// Notify calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// notify tells the observer of s, if any, of e and logs it.
func (s settings) notify(e Event) {
	s.log(e)
	if s.observer == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("taskproc: observer panicked", "topic", e.Topic, "event", e.Kind.String(), "panic", p)
		}
	}()
	s.observer.Observe(e)
}

// log logs e: failures as warnings, a fatal error as an error, the rest at
// debug level.
func (s settings) log(e Event) {
	level := slog.LevelDebug
	switch e.Kind {
	case EventFailed, EventPollFailed, EventHeartbeatFailed, EventMaintenanceFailed, EventAbandoned,
		EventNotifierLost, EventReconcileFailed, EventScheduleFailed, EventSettleRetried, EventLost, EventPoisoned:
		level = slog.LevelWarn
	case EventFatal, EventFenced:
		level = slog.LevelError
	case EventReleased, EventRecovered, EventActivated, EventLeading, EventConceded, EventRescued:
		level = slog.LevelInfo
	}
	if !s.logger.Enabled(context.Background(), level) {
		return
	}
	var attrs []any
	if e.Topic != "" {
		attrs = append(attrs, "topic", e.Topic)
	}
	if e.Owner != "" {
		attrs = append(attrs, "owner", e.Owner)
	}
	if len(e.Tasks) > 0 {
		attrs = append(attrs, "tasks", len(e.Tasks))
	}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err)
	}
	if e.Duration > 0 {
		attrs = append(attrs, "duration", e.Duration)
	}
	s.logger.Log(context.Background(), level, "taskproc: "+e.Kind.String(), attrs...)
}
