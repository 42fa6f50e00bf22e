package taskprocotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
	"github.com/taskrepo/taskrepo/taskprocotel"
)

// newReader returns a ManualReader and a meter whose instruments it reads.
func newReader(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	return reader, provider
}

// collect collects reader's metrics by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	metrics := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if _, dup := metrics[m.Name]; dup {
				t.Fatalf("metric %s collected twice", m.Name)
			}
			metrics[m.Name] = m
		}
	}
	return metrics
}

// attrs encodes key-value pairs as the key of a data point.
func attrs(kv ...string) string {
	var list []attribute.KeyValue
	for i := 0; i+1 < len(kv); i += 2 {
		list = append(list, attribute.String(kv[i], kv[i+1]))
	}
	set := attribute.NewSet(list...)
	return set.Encoded(attribute.DefaultEncoder())
}

// counterValues returns the values of a monotonic int64 sum by attributes,
// checking its unit and temporality.
func counterValues(t *testing.T, metrics map[string]metricdata.Metrics, name, unit string) map[string]int64 {
	t.Helper()
	m, ok := metrics[name]
	if !ok {
		return nil
	}
	if m.Unit != unit {
		t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: data %T, want an int64 sum", name, m.Data)
	}
	if !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
		t.Errorf("%s: monotonic %v, temporality %v; want a monotonic cumulative sum", name, sum.IsMonotonic, sum.Temporality)
	}
	values := map[string]int64{}
	for _, p := range sum.DataPoints {
		values[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
	}
	return values
}

// histogramPoints returns the data points of the batch duration histogram
// by attributes.
func histogramPoints(t *testing.T, metrics map[string]metricdata.Metrics) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := metrics["taskproc.batch.duration"]
	if !ok {
		return nil
	}
	if m.Unit != "s" {
		t.Errorf("taskproc.batch.duration: unit %q, want s", m.Unit)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("taskproc.batch.duration: data %T, want a float64 histogram", m.Data)
	}
	points := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, p := range h.DataPoints {
		points[p.Attributes.Encoded(attribute.DefaultEncoder())] = p
	}
	return points
}

// checkCounter compares a counter's values by attributes with want.
func checkCounter(t *testing.T, metrics map[string]metricdata.Metrics, name, unit string, want map[string]int64) {
	t.Helper()
	got := counterValues(t, metrics, name, unit)
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", name, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", name, got, want)
			return
		}
	}
}

// tasks returns n tasks from sequence first on.
func tasks(first int64, n int) []taskapi.Task {
	list := make([]taskapi.Task, n)
	for i := range list {
		list[i] = taskapi.Task{Sequence: first + int64(i), Identifier: "id"}
	}
	return list
}

// decide gives each of list the result of results, in turn.
func decide(list []taskapi.Task, results ...taskapi.Result) taskproc.Decisions {
	d := taskproc.Decisions{}
	for i, task := range list {
		d[task] = taskapi.Decision{Result: results[i%len(results)]}
	}
	return d
}

func TestRecorderRecordsEvents(t *testing.T) {
	reader, provider := newReader(t)
	l, err := taskprocotel.NewRecorder(provider.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	a1, a2, a3 := tasks(1, 4), tasks(10, 3), tasks(20, 2)
	b1 := tasks(100, 5)
	events := []taskproc.Event{
		{Kind: taskproc.EventPolled, Topic: "a", Tasks: a1},
		{Kind: taskproc.EventDispatched, Topic: "a", Tasks: a1},
		{Kind: taskproc.EventCompleted, Topic: "a", Tasks: a1, Duration: 3 * time.Millisecond,
			Decisions: decide(a1, taskapi.Success, taskapi.Success, taskapi.Filter, taskapi.Failure)},
		{Kind: taskproc.EventPolled, Topic: "a", Tasks: a2},
		{Kind: taskproc.EventFailed, Topic: "a", Tasks: a2, Err: boom, Duration: time.Second}, // on a bound: its bucket
		{Kind: taskproc.EventPolled, Topic: "a", Tasks: a3},
		{Kind: taskproc.EventReleased, Topic: "a", Tasks: a3, Duration: time.Minute}, // above every bound
		{Kind: taskproc.EventEmpty, Topic: "a"},
		{Kind: taskproc.EventWoken, Topic: "a"},
		{Kind: taskproc.EventPollFailed, Topic: "a", Err: boom, Duration: 10 * time.Millisecond},
		{Kind: taskproc.EventPollFailed, Topic: "a", Err: boom, Duration: 20 * time.Millisecond},
		{Kind: taskproc.EventPolled, Topic: "b", Tasks: b1},
		{Kind: taskproc.EventCompleted, Topic: "b", Tasks: b1, Duration: 0,
			Decisions: decide(b1, taskapi.Suspension, taskapi.Success)},
		// A release that could not be written fails the batch without tasks.
		{Kind: taskproc.EventFailed, Topic: "b", Err: boom, Duration: 2 * time.Millisecond},
		{Kind: taskproc.EventFatal, Topic: "b", Err: boom},
		{Kind: taskproc.EventHeartbeatFailed, Err: boom},
		{Kind: taskproc.EventHeartbeatFailed, Err: boom},
		// A fleet: a fenced owner gives up a batch, recovers; leadership,
		// activation, a lost notifier, failed maintenance.
		{Kind: taskproc.EventFenced, Owner: "o1", Err: boom},
		{Kind: taskproc.EventAbandoned, Topic: "a", Tasks: a3},
		{Kind: taskproc.EventRecovered, Owner: "o2"},
		{Kind: taskproc.EventLeading, Topic: "b", Term: taskapi.Term{Topic: "b", Number: 1}},
		{Kind: taskproc.EventConceded, Topic: "b", Term: taskapi.Term{Topic: "b", Number: 1}, Err: boom},
		{Kind: taskproc.EventLeading, Topic: "b", Term: taskapi.Term{Topic: "b", Number: 3}},
		{Kind: taskproc.EventActivated, Topic: "a", Activation: taskapi.Paused},
		{Kind: taskproc.EventActivated, Topic: "a", Activation: taskapi.Running},
		{Kind: taskproc.EventNotifierLost, Err: boom},
		{Kind: taskproc.EventMaintenanceFailed, Owner: "o2", Err: boom},
		{Kind: taskproc.EventReconcileFailed, Err: boom},
		// What keeps database errors and crashes from becoming results.
		{Kind: taskproc.EventSettleRetried, Topic: "a", Tasks: a3, Err: boom},
		{Kind: taskproc.EventSettleRetried, Topic: "a", Tasks: a3, Err: boom},
		{Kind: taskproc.EventLost, Topic: "b", Err: boom},
		{Kind: taskproc.EventRescued, Topic: "a", Tasks: a3},
		{Kind: taskproc.EventPoisoned, Topic: "b", Tasks: b1[:1]},
		// Polls that limits held back, one of them empty.
		{Kind: taskproc.EventLimited, Topic: "a", Tasks: a3},
		{Kind: taskproc.EventLimited, Topic: "a"},
		{Kind: taskproc.EventCancelled, Topic: "b", Tasks: b1[:1]},
		{Kind: taskproc.EventCancelled, Topic: "b"},
		// Periodic pushes that a full topic refused, and one that failed
		// otherwise.
		{Kind: taskproc.EventScheduleFailed, Topic: "a", Err: fmt.Errorf("push: %w", &taskapi.CapacityError{Topic: "c", Capacity: 5, Count: 6})},
		{Kind: taskproc.EventScheduleFailed, Topic: "b", Err: &taskapi.CapacityError{Topic: "c", Capacity: 5, Count: 7}},
		{Kind: taskproc.EventScheduleFailed, Topic: "b", Err: boom},
	}
	for _, e := range events {
		l.Observe(e)
	}
	metrics := collect(t, reader)

	checkCounter(t, metrics, "taskproc.tasks.polled", "{task}", map[string]int64{
		attrs("topic", "a"): 9, attrs("topic", "b"): 5,
	})
	checkCounter(t, metrics, "taskproc.tasks.completed", "{task}", map[string]int64{
		attrs("topic", "a", "result", "SUCCESS"):    2,
		attrs("topic", "a", "result", "FILTER"):     1,
		attrs("topic", "a", "result", "FAILURE"):    1,
		attrs("topic", "b", "result", "SUSPENSION"): 3,
		attrs("topic", "b", "result", "SUCCESS"):    2,
	})
	checkCounter(t, metrics, "taskproc.tasks.failed", "{task}", map[string]int64{attrs("topic", "a"): 3})
	checkCounter(t, metrics, "taskproc.tasks.released", "{task}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.batches.failed", "{batch}", map[string]int64{
		attrs("topic", "a"): 1, attrs("topic", "b"): 1,
	})
	checkCounter(t, metrics, "taskproc.polls.failed", "{poll}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.loops.died", "{loop}", map[string]int64{attrs("topic", "b"): 1})
	checkCounter(t, metrics, "taskproc.heartbeats.failed", "{heartbeat}", map[string]int64{attrs(): 2})
	checkCounter(t, metrics, "taskproc.owner.fenced", "{fencing}", map[string]int64{attrs(): 1})
	checkCounter(t, metrics, "taskproc.owner.recovered", "{recovery}", map[string]int64{attrs(): 1})
	checkCounter(t, metrics, "taskproc.tasks.abandoned", "{task}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.leadership.acquired", "{term}", map[string]int64{attrs("topic", "b"): 2})
	checkCounter(t, metrics, "taskproc.leadership.conceded", "{term}", map[string]int64{attrs("topic", "b"): 1})
	checkCounter(t, metrics, "taskproc.activation.changes", "{change}", map[string]int64{
		attrs("topic", "a", "activation", "PAUSED"): 1, attrs("topic", "a", "activation", "RUNNING"): 1,
	})
	checkCounter(t, metrics, "taskproc.notifier.lost", "{error}", map[string]int64{attrs(): 1})
	checkCounter(t, metrics, "taskproc.maintenance.failed", "{run}", map[string]int64{attrs(): 1})
	checkCounter(t, metrics, "taskproc.settlements.retried", "{attempt}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.batches.lost", "{batch}", map[string]int64{attrs("topic", "b"): 1})
	checkCounter(t, metrics, "taskproc.tasks.rescued", "{task}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.tasks.poisoned", "{task}", map[string]int64{attrs("topic", "b"): 1})
	checkCounter(t, metrics, "taskproc.pushes.refused", "{push}", map[string]int64{attrs("topic", "c"): 2})
	checkCounter(t, metrics, "taskproc.tasks.cancelled", "{task}", map[string]int64{attrs("topic", "b"): 1})
	checkCounter(t, metrics, "taskproc.polls.limited", "{poll}", map[string]int64{attrs("topic", "a"): 2})
	checkCounter(t, metrics, "taskproc.reconcile.failed", "{run}", map[string]int64{attrs(): 1})

	points := histogramPoints(t, metrics)
	if len(points) != 2 {
		t.Fatalf("taskproc.batch.duration: points %v, want topics a and b", points)
	}
	wantBounds := []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}
	if got := taskprocotel.BucketBoundaries(); !slices.Equal(got, wantBounds) {
		t.Errorf("BucketBoundaries() = %v, want %v", got, wantBounds)
	}
	for _, c := range []struct {
		topic   string
		count   uint64
		sum     float64
		buckets []uint64
	}{
		// a: 3 ms, 1 s, 60 s
		{"a", 3, 61.003, []uint64{0, 1, 0, 0, 0, 0, 1, 0, 0, 1}},
		// b: 0, 2 ms
		{"b", 2, 0.002, []uint64{1, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		p, ok := points[attrs("topic", c.topic)]
		if !ok {
			t.Errorf("taskproc.batch.duration: no point for topic %s", c.topic)
			continue
		}
		if !slices.Equal(p.Bounds, wantBounds) {
			t.Errorf("topic %s: bounds %v, want %v", c.topic, p.Bounds, wantBounds)
		}
		if p.Count != c.count || !slices.Equal(p.BucketCounts, c.buckets) || p.Sum < c.sum-1e-9 || p.Sum > c.sum+1e-9 {
			t.Errorf("topic %s: count %d, sum %v, buckets %v; want %d, %v, %v", c.topic, p.Count, p.Sum, p.BucketCounts, c.count, c.sum, c.buckets)
		}
	}

	var want []string
	for _, name := range []string{
		"taskproc.tasks.polled", "taskproc.tasks.completed", "taskproc.tasks.failed", "taskproc.tasks.released",
		"taskproc.batches.failed", "taskproc.polls.failed", "taskproc.loops.died", "taskproc.heartbeats.failed",
		"taskproc.batch.duration", "taskproc.owner.fenced", "taskproc.owner.recovered", "taskproc.tasks.abandoned",
		"taskproc.leadership.acquired", "taskproc.leadership.conceded", "taskproc.activation.changes",
		"taskproc.notifier.lost", "taskproc.maintenance.failed", "taskproc.reconcile.failed",
		"taskproc.settlements.retried", "taskproc.batches.lost", "taskproc.tasks.rescued", "taskproc.tasks.poisoned",
		"taskproc.pushes.refused", "taskproc.polls.limited", "taskproc.tasks.cancelled",
	} {
		want = append(want, name)
		if metrics[name].Description == "" {
			t.Errorf("%s has no description", name)
		}
	}
	var got []string
	for name := range metrics {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
}

// The histogram's buckets are those of taskproc.Stats.Runs: a duration on a
// bound falls into the bound's bucket.
func TestRecorderBucketsMatchRunBounds(t *testing.T) {
	reader, provider := newReader(t)
	l, err := taskprocotel.NewRecorder(provider.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range taskproc.RunBounds {
		l.Observe(taskproc.Event{Kind: taskproc.EventReleased, Topic: "t", Duration: d})
		l.Observe(taskproc.Event{Kind: taskproc.EventReleased, Topic: "t", Duration: d + time.Nanosecond})
	}
	p := histogramPoints(t, collect(t, reader))[attrs("topic", "t")]
	want := make([]uint64, len(taskproc.RunBounds)+1)
	want[0] = 1
	for i := 1; i < len(want); i++ {
		want[i] = 2
	}
	want[len(want)-1] = 1
	if !slices.Equal(p.BucketCounts, want) {
		t.Errorf("buckets %v, want %v", p.BucketCounts, want)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	reader, provider := newReader(t)
	l, err := taskprocotel.NewRecorder(provider.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, rounds = 8, 200
	topics := []string{"x", "y", "z"}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				topic := topics[(g+i)%len(topics)]
				batch := tasks(int64(i*10), 2)
				l.Observe(taskproc.Event{Kind: taskproc.EventPolled, Topic: topic, Tasks: batch})
				l.Observe(taskproc.Event{Kind: taskproc.EventCompleted, Topic: topic, Tasks: batch,
					Decisions: decide(batch, taskapi.Success), Duration: time.Millisecond})
			}
		})
	}
	wg.Wait()
	metrics := collect(t, reader)
	var polled, completed int64
	for _, v := range counterValues(t, metrics, "taskproc.tasks.polled", "{task}") {
		polled += v
	}
	for _, v := range counterValues(t, metrics, "taskproc.tasks.completed", "{task}") {
		completed += v
	}
	var batches uint64
	for _, p := range histogramPoints(t, metrics) {
		batches += p.Count
	}
	if polled != 2*goroutines*rounds || completed != polled || batches != goroutines*rounds {
		t.Errorf("polled %d, completed %d, batches %d; want %d, %d, %d", polled, completed, batches,
			2*goroutines*rounds, 2*goroutines*rounds, goroutines*rounds)
	}
}

func TestTee(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	listen := func(name string) taskproc.Observer {
		return taskproc.ObserverFunc(func(e taskproc.Event) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, name+":"+e.Kind.String())
		})
	}
	tee := taskprocotel.Tee(listen("first"), nil, listen("second"))
	tee.Observe(taskproc.Event{Kind: taskproc.EventEmpty, Topic: "t"})
	want := []string{"first:poll found nothing", "second:poll found nothing"}
	if !slices.Equal(heard, want) {
		t.Errorf("heard %v, want %v", heard, want)
	}
	taskprocotel.Tee().Observe(taskproc.Event{Kind: taskproc.EventEmpty}) // hears nothing, does not panic
}

func TestNewRecorderWithoutMeter(t *testing.T) {
	if _, err := taskprocotel.NewRecorder(nil); err == nil {
		t.Error("NewRecorder(nil) succeeded")
	}
}
