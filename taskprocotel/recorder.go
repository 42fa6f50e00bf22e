package taskprocotel

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// The attribute keys of the metrics.
const (
	topicKey  = attribute.Key("topic")
	resultKey = attribute.Key("result")
	// activationKey is the activation a topic changed to.
	activationKey = attribute.Key("activation")
)

// results are the valid results, indexed by their value.
var results = [...]taskapi.Result{taskapi.Failure, taskapi.Suspension, taskapi.Filter, taskapi.Success}

// A Recorder is a taskproc.Observer that records the runtime's events as
// OpenTelemetry metrics (see the package documentation for the list). Give
// it to taskproc.New or taskproc.NewManager with taskproc.WithObserver; one
// Recorder may serve any number of Clients and Managers. Its Observe is safe
// for concurrent use and does not block: it adds to counters and records
// into a histogram with attribute sets cached per topic.
type Recorder struct {
	polled, completed, failed, released metric.Int64Counter
	batchesFailed, pollsFailed          metric.Int64Counter
	loopsDied, heartbeatsFailed         metric.Int64Counter
	// The health of a fleet: fencing, leadership, wake-ups, activation.
	abandoned, fenced, recovered       metric.Int64Counter
	maintenanceFailed, reconcileFailed metric.Int64Counter
	notifierLost, activated            metric.Int64Counter
	leading, conceded                  metric.Int64Counter
	// What the runtime did so that no database error and no crash
	// becomes a result: settlements tried again, batches whose tasks
	// another owner took, tasks rescued and tasks given up as poison.
	settleRetried, lost, rescued, poisoned metric.Int64Counter
	// Pushes of the runtime (follow-ups, periodic tasks) that a topic's
	// capacity refused.
	refused metric.Int64Counter
	// Polls that a topic's limits across the fleet held back.
	limited   metric.Int64Counter
	cancelled metric.Int64Counter
	duration  metric.Float64Histogram

	none  metric.MeasurementOption // no attributes (events without a topic)
	attrs sync.Map                 // topic → *topicAttrs
}

var _ taskproc.Observer = (*Recorder)(nil)

// topicAttrs are the attribute sets of one topic, made once.
type topicAttrs struct {
	topic   metric.MeasurementOption               // topic
	results [len(results)]metric.MeasurementOption // topic and result
}

// NewRecorder returns a Recorder that records with instruments of meter.
// It fails when meter refuses to make one of them.
func NewRecorder(meter metric.Meter) (*Recorder, error) {
	if meter == nil {
		return nil, fmt.Errorf("taskprocotel: new recorder: a meter is required")
	}
	l := &Recorder{none: metric.WithAttributeSet(attribute.NewSet())}
	counters := []struct {
		dst               *metric.Int64Counter
		name, unit, about string
	}{
		{&l.polled, "taskproc.tasks.polled", "{task}", "Tasks polled."},
		{&l.completed, "taskproc.tasks.completed", "{task}", "Tasks completed with the handler's decisions, by result."},
		{&l.failed, "taskproc.tasks.failed", "{task}", "Tasks failed with their batch."},
		{&l.released, "taskproc.tasks.released", "{task}", "Tasks given back to Ready unprocessed (interrupted or released)."},
		{&l.batchesFailed, "taskproc.batches.failed", "{batch}", "Batches failed."},
		{&l.pollsFailed, "taskproc.polls.failed", "{poll}", "Polls that failed."},
		{&l.loopsDied, "taskproc.loops.died", "{loop}", "Poll loops that died."},
		{&l.heartbeatsFailed, "taskproc.heartbeats.failed", "{heartbeat}", "Heartbeats of a Client that failed."},
		{&l.abandoned, "taskproc.tasks.abandoned", "{task}", "Tasks a fenced owner gave up without a write."},
		{&l.fenced, "taskproc.owner.fenced", "{fencing}", "Times the owner fenced itself, its heartbeat unconfirmed past the expiry."},
		{&l.recovered, "taskproc.owner.recovered", "{recovery}", "Times the runtime went on under a successor owner."},
		{&l.maintenanceFailed, "taskproc.maintenance.failed", "{run}", "Expiries, revivals and purges of the keeper that failed."},
		{&l.reconcileFailed, "taskproc.reconcile.failed", "{run}", "Readings of the activations that failed."},
		{&l.notifierLost, "taskproc.notifier.lost", "{error}", "Errors the Notifier met and reconnected after."},
		{&l.activated, "taskproc.activation.changes", "{change}", "Activation changes applied, by activation."},
		{&l.leading, "taskproc.leadership.acquired", "{term}", "Terms of leadership this process began."},
		{&l.conceded, "taskproc.leadership.conceded", "{term}", "Terms of leadership this process ended or lost."},
		{&l.settleRetried, "taskproc.settlements.retried", "{attempt}", "Settlement writes that failed for the database and were tried again."},
		{&l.lost, "taskproc.batches.lost", "{batch}", "Batches whose every task another owner took before their settlement was written."},
		{&l.rescued, "taskproc.tasks.rescued", "{task}", "Expired tasks this process's keeper revived."},
		{&l.poisoned, "taskproc.tasks.poisoned", "{task}", "Expired tasks this process's keeper ended with Failure, rescued too often."},
		{&l.refused, "taskproc.pushes.refused", "{push}", "Pushes of the runtime (follow-ups, periodic tasks) that a topic's capacity refused, by that topic."},
		{&l.cancelled, "taskproc.tasks.cancelled", "{task}", "Tasks cancelled while this process ran them (taskapi.Canceller)."},
		{&l.limited, "taskproc.polls.limited", "{poll}", "Polls that the topic's limits across the fleet held back (at its Active limit, or an identifier at its limit)."},
	}
	for _, c := range counters {
		counter, err := meter.Int64Counter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.about))
		if err != nil {
			return nil, fmt.Errorf("taskprocotel: new recorder: %s: %w", c.name, err)
		}
		*c.dst = counter
	}
	var err error
	l.duration, err = meter.Float64Histogram("taskproc.batch.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time batches took from their poll to their settlement (completed, failed or released)."),
		metric.WithExplicitBucketBoundaries(BucketBoundaries()...))
	if err != nil {
		return nil, fmt.Errorf("taskprocotel: new recorder: taskproc.batch.duration: %w", err)
	}
	return l, nil
}

// BucketBoundaries returns the explicit bucket boundaries, in seconds, of
// the histogram taskproc.batch.duration: taskproc.RunBounds, so that its
// buckets are those of taskproc.Stats.Runs.
func BucketBoundaries() []float64 {
	bounds := make([]float64, len(taskproc.RunBounds))
	for i, d := range taskproc.RunBounds {
		bounds[i] = d.Seconds()
	}
	return bounds
}

// Notify records e. Events that carry no measure of their own (a batch
// dispatched, an empty poll, a wake-up) are ignored. An event whose error
// is a capacity's refusal (*taskapi.CapacityError: a follow-up that failed
// its batch, a periodic push) counts a refused push of the full topic.
func (l *Recorder) Observe(e taskproc.Event) {
	ctx := context.Background()
	var full *taskapi.CapacityError
	if errors.As(e.Err, &full) {
		l.refused.Add(ctx, 1, l.topic(full.Topic).topic)
	}
	switch e.Kind {
	case taskproc.EventPolled:
		add(ctx, l.polled, len(e.Tasks), l.topic(e.Topic).topic)
	case taskproc.EventCompleted:
		l.decisions(ctx, e)
		l.duration.Record(ctx, e.Duration.Seconds(), l.topic(e.Topic).topic)
	case taskproc.EventFailed:
		attrs := l.topic(e.Topic).topic
		add(ctx, l.failed, len(e.Tasks), attrs)
		l.batchesFailed.Add(ctx, 1, attrs)
		l.duration.Record(ctx, e.Duration.Seconds(), attrs)
	case taskproc.EventReleased:
		attrs := l.topic(e.Topic).topic
		add(ctx, l.released, len(e.Tasks), attrs)
		l.duration.Record(ctx, e.Duration.Seconds(), attrs)
	case taskproc.EventPollFailed:
		l.pollsFailed.Add(ctx, 1, l.topicOrNone(e.Topic))
	case taskproc.EventFatal:
		l.loopsDied.Add(ctx, 1, l.topicOrNone(e.Topic))
	case taskproc.EventHeartbeatFailed:
		l.heartbeatsFailed.Add(ctx, 1, l.topicOrNone(e.Topic))
	default:
		l.fleet(ctx, e)
	}
}

// fleet records the events of a fleet of processes: fencing, leadership,
// wake-ups and activation.
func (l *Recorder) fleet(ctx context.Context, e taskproc.Event) {
	switch e.Kind {
	case taskproc.EventAbandoned:
		add(ctx, l.abandoned, len(e.Tasks), l.topic(e.Topic).topic)
	case taskproc.EventFenced:
		l.fenced.Add(ctx, 1, l.none)
	case taskproc.EventRecovered:
		l.recovered.Add(ctx, 1, l.none)
	case taskproc.EventMaintenanceFailed:
		l.maintenanceFailed.Add(ctx, 1, l.topicOrNone(e.Topic))
	case taskproc.EventReconcileFailed:
		l.reconcileFailed.Add(ctx, 1, l.topicOrNone(e.Topic))
	case taskproc.EventNotifierLost:
		l.notifierLost.Add(ctx, 1, l.none)
	case taskproc.EventActivated:
		l.activated.Add(ctx, 1, metric.WithAttributes(topicKey.String(e.Topic), activationKey.String(e.Activation.String())))
	case taskproc.EventLeading:
		l.leading.Add(ctx, 1, l.topic(e.Topic).topic)
	case taskproc.EventConceded:
		l.conceded.Add(ctx, 1, l.topic(e.Topic).topic)
	case taskproc.EventSettleRetried:
		l.settleRetried.Add(ctx, 1, l.topic(e.Topic).topic)
	case taskproc.EventLost:
		l.lost.Add(ctx, 1, l.topic(e.Topic).topic)
	case taskproc.EventRescued:
		add(ctx, l.rescued, len(e.Tasks), l.topic(e.Topic).topic)
	case taskproc.EventPoisoned:
		add(ctx, l.poisoned, len(e.Tasks), l.topic(e.Topic).topic)
	case taskproc.EventLimited:
		l.limited.Add(ctx, 1, l.topic(e.Topic).topic)
	case taskproc.EventCancelled:
		add(ctx, l.cancelled, len(e.Tasks), l.topic(e.Topic).topic)
	}
}

// decisions counts the decisions of a completed batch by result.
func (l *Recorder) decisions(ctx context.Context, e taskproc.Event) {
	var counts [len(results)]int
	var others map[taskapi.Result]int // results out of range, never in practice
	for _, d := range e.Decisions {
		if d.Result.Valid() {
			counts[d.Result]++
			continue
		}
		if others == nil {
			others = map[taskapi.Result]int{}
		}
		others[d.Result]++
	}
	attrs := l.topic(e.Topic)
	for r, n := range counts {
		add(ctx, l.completed, n, attrs.results[r])
	}
	for r, n := range others {
		add(ctx, l.completed, n, metric.WithAttributes(topicKey.String(e.Topic), resultKey.String(r.String())))
	}
}

// topic returns the attribute sets of topic, made on its first event.
func (l *Recorder) topic(topic string) *topicAttrs {
	if a, ok := l.attrs.Load(topic); ok {
		return a.(*topicAttrs)
	}
	a := &topicAttrs{topic: metric.WithAttributeSet(attribute.NewSet(topicKey.String(topic)))}
	for i, r := range results {
		a.results[i] = metric.WithAttributeSet(attribute.NewSet(topicKey.String(topic), resultKey.String(r.String())))
	}
	stored, _ := l.attrs.LoadOrStore(topic, a)
	return stored.(*topicAttrs)
}

// topicOrNone returns the topic's attribute set, or the empty set for an
// event without a topic (a Client's heartbeat).
func (l *Recorder) topicOrNone(topic string) metric.MeasurementOption {
	if topic == "" {
		return l.none
	}
	return l.topic(topic).topic
}

// add adds n to counter unless n is zero.
func add(ctx context.Context, counter metric.Int64Counter, n int, attrs metric.MeasurementOption) {
	if n != 0 {
		counter.Add(ctx, int64(n), attrs)
	}
}

// Tee returns a taskproc.Observer that tells each of observers of every
// event, in order (nil ones are skipped), for taskproc.WithObserver takes
// one observer: Tee(recorder, mine). A panic in one of them keeps
// the event from those after it (taskproc recovers and logs it).
func Tee(observers ...taskproc.Observer) taskproc.Observer {
	var all []taskproc.Observer
	for _, l := range observers {
		if l != nil {
			all = append(all, l)
		}
	}
	return taskproc.ObserverFunc(func(e taskproc.Event) {
		for _, l := range all {
			l.Observe(e)
		}
	})
}
