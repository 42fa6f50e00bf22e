package taskprocotel

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/taskrepo/taskrepo/taskproc"
)

// DefaultGaugeTimeout is how long RegisterGauges lets the Ready gauge of a topic
// take by default (see WithGaugeTimeout).
const DefaultGaugeTimeout = 5 * time.Second

// A GaugeOption configures RegisterGauges.
type GaugeOption func(*observeSettings)

// observeSettings are what the options of RegisterGauges set.
type observeSettings struct {
	gaugeTimeout time.Duration
}

// WithGaugeTimeout sets how long the query of one topic's Ready gauge
// (taskproc.Manager.Gauge) may take at a collection (DefaultGaugeTimeout);
// a topic whose query takes longer is left out of that collection's
// taskproc.ready.* values. It must be positive.
func WithGaugeTimeout(d time.Duration) GaugeOption {
	return func(s *observeSettings) { s.gaugeTimeout = d }
}

// RegisterGauges registers, with meter, observable gauges of every topic that has
// a handler in client, read at each collection:
//
//   - taskproc.batches.in_flight ({batch}): batches polled and not settled
//     yet (taskproc.Manager.Stats), from memory;
//   - taskproc.ready.depth ({task}): tasks Ready in the topic;
//   - taskproc.ready.oldest_age (s): how long ago the oldest Ready task was
//     created, 0 when none is Ready.
//
// Each has the attribute topic. The topics are read from client at each
// collection, so topics handled after RegisterGauges are observed too.
//
// The two taskproc.ready.* gauges query the database: each collection runs
// taskproc.Manager.Gauge once per topic (a count on the index of Ready
// tasks and a read of the oldest one, in a transaction of its own), so the
// collection interval of the reader (a PeriodicReader's interval, say) is
// how often those queries run. Each query has the timeout of
// WithGaugeTimeout, within the collection's own context; a topic whose
// query fails is left out of that collection's taskproc.ready.* values,
// silently, and tried again at the next. They read the whole topic, not
// this process's share: every process that observes a topic reports the
// same depth, so do not sum them across processes.
//
// Unregister the returned Registration to stop observing.
func RegisterGauges[Tx any](meter metric.Meter, client *taskproc.Client[Tx], opts ...GaugeOption) (metric.Registration, error) {
	s := observeSettings{gaugeTimeout: DefaultGaugeTimeout}
	for _, opt := range opts {
		opt(&s)
	}
	switch {
	case meter == nil || client == nil:
		return nil, fmt.Errorf("taskprocotel: observe: a meter and a client are required")
	case s.gaugeTimeout <= 0:
		return nil, fmt.Errorf("taskprocotel: observe: gauge timeout %v is not positive", s.gaugeTimeout)
	}
	inFlight, err := meter.Int64ObservableGauge("taskproc.batches.in_flight",
		metric.WithUnit("{batch}"), metric.WithDescription("Batches polled and not settled yet."))
	if err != nil {
		return nil, fmt.Errorf("taskprocotel: observe: taskproc.batches.in_flight: %w", err)
	}
	depth, err := meter.Int64ObservableGauge("taskproc.ready.depth",
		metric.WithUnit("{task}"), metric.WithDescription("Tasks Ready in the topic."))
	if err != nil {
		return nil, fmt.Errorf("taskprocotel: observe: taskproc.ready.depth: %w", err)
	}
	age, err := meter.Float64ObservableGauge("taskproc.ready.oldest_age",
		metric.WithUnit("s"), metric.WithDescription("Age of the oldest Ready task of the topic; 0 when none is Ready."))
	if err != nil {
		return nil, fmt.Errorf("taskprocotel: observe: taskproc.ready.oldest_age: %w", err)
	}
	callback := func(ctx context.Context, o metric.Observer) error {
		for _, topic := range client.Topics() {
			m := client.Manager(topic)
			if m == nil {
				continue
			}
			attrs := metric.WithAttributeSet(attribute.NewSet(topicKey.String(topic)))
			o.ObserveInt64(inFlight, int64(m.Stats().InFlight), attrs)
			g, ok := gauge(ctx, m, s.gaugeTimeout)
			if !ok {
				continue
			}
			o.ObserveInt64(depth, g.Ready, attrs)
			o.ObserveFloat64(age, oldestAge(g, time.Now()), attrs)
		}
		return nil
	}
	reg, err := meter.RegisterCallback(callback, inFlight, depth, age)
	if err != nil {
		return nil, fmt.Errorf("taskprocotel: observe: register the callback: %w", err)
	}
	return reg, nil
}

// gauge reads the Ready gauge of m within timeout.
func gauge[Tx any](ctx context.Context, m *taskproc.Manager[Tx], timeout time.Duration) (taskproc.Gauge, bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, err := m.Gauge(ctx)
	return g, err == nil
}

// oldestAge returns how long before now the oldest Ready task of g was
// created, in seconds: 0 when none is Ready, and never below 0 (the
// database's clock may be ahead of the process's).
func oldestAge(g taskproc.Gauge, now time.Time) float64 {
	if g.Ready == 0 || g.OldestReady.IsZero() {
		return 0
	}
	return max(now.Sub(g.OldestReady).Seconds(), 0)
}
