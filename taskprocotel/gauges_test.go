package taskprocotel_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
	"github.com/taskrepo/taskrepo/taskprocotel"
)

// patience bounds every wait of these tests; nothing is timed.
const patience = 30 * time.Second

// openSQLite opens a fresh, migrated SQLite database in a temporary directory.
func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "tasks.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := migrations.Up(context.Background(), db, migrations.SQLite); err != nil {
		t.Fatal(err)
	}
	return db
}

// gauge is what a collection observed of one topic; a value is nil when
// the topic had no data point.
type gauge struct {
	inFlight, depth *int64
	age             *float64
}

// gauges returns the observed gauges by topic, checking their units.
func gauges(t *testing.T, metrics map[string]metricdata.Metrics) map[string]*gauge {
	t.Helper()
	byTopic := map[string]*gauge{}
	of := func(set attribute.Set) *gauge {
		topic, ok := set.Value("topic")
		if !ok || set.Len() != 1 {
			t.Fatalf("data point with attributes %v, want only topic", set.Encoded(attribute.DefaultEncoder()))
		}
		if byTopic[topic.AsString()] == nil {
			byTopic[topic.AsString()] = &gauge{}
		}
		return byTopic[topic.AsString()]
	}
	for name, unit := range map[string]string{
		"taskproc.batches.in_flight": "{batch}", "taskproc.ready.depth": "{task}", "taskproc.ready.oldest_age": "s",
	} {
		m, ok := metrics[name]
		if !ok {
			continue
		}
		if m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
		}
		if m.Description == "" {
			t.Errorf("%s has no description", name)
		}
		switch data := m.Data.(type) {
		case metricdata.Gauge[int64]:
			for _, p := range data.DataPoints {
				v := p.Value
				if name == "taskproc.batches.in_flight" {
					of(p.Attributes).inFlight = &v
				} else {
					of(p.Attributes).depth = &v
				}
			}
		case metricdata.Gauge[float64]:
			for _, p := range data.DataPoints {
				v := p.Value
				of(p.Attributes).age = &v
			}
		default:
			t.Fatalf("%s: data %T, want a gauge", name, m.Data)
		}
	}
	return byTopic
}

// checkGauge compares what was observed of topic with the want values; a
// negative depth wants no depth nor age.
func checkGauge(t *testing.T, observed map[string]*gauge, topic string, inFlight, depth int64) {
	t.Helper()
	g := observed[topic]
	if g == nil {
		t.Errorf("topic %s: nothing observed", topic)
		return
	}
	if g.inFlight == nil || *g.inFlight != inFlight {
		t.Errorf("topic %s: in flight %s, want %d", topic, show(g.inFlight), inFlight)
	}
	if depth < 0 {
		if g.depth != nil || g.age != nil {
			t.Errorf("topic %s: depth %s, age %s; want neither", topic, show(g.depth), show(g.age))
		}
		return
	}
	if g.depth == nil || *g.depth != depth {
		t.Errorf("topic %s: ready depth %s, want %d", topic, show(g.depth), depth)
	}
	switch {
	case g.age == nil:
		t.Errorf("topic %s: no oldest age", topic)
	case *g.age < 0:
		t.Errorf("topic %s: oldest age %v is negative", topic, *g.age)
	case depth == 0 && *g.age != 0:
		t.Errorf("topic %s: oldest age %v with nothing Ready, want 0", topic, *g.age)
	}
}

func show[T any](v *T) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}

func TestObserve(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	repo, err := taskansi.New(taskansi.SQLite, "otel-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"work", "idle"} {
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
	}
	const pushed, size = 5, 2
	var creations []taskapi.Creation
	for i := range pushed {
		creations = append(creations, taskapi.Creation{Identifier: fmt.Sprint("task-", i)})
	}
	if _, err := repo.Push(ctx, db, "work", taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}

	reader, provider := newReader(t)
	meter := provider.Meter("test")
	recorder, err := taskprocotel.NewRecorder(meter)
	if err != nil {
		t.Fatal(err)
	}
	client, err := taskproc.New(repo, taskansi.Transact(db, nil), taskproc.WithObserver(recorder), taskproc.WithHeartbeat(0), taskproc.WithExpiry(0))
	if err != nil {
		t.Fatal(err)
	}
	// The handler holds its batches until release is closed: the first
	// batch stays in flight, and the loop, which runs the handler, polls
	// nothing more meanwhile.
	polled := make(chan int, pushed)
	done := make(chan int, pushed)
	release := make(chan struct{})
	err = client.Handle("work", taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		polled <- len(b.Tasks())
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		decisions := taskproc.Decisions{}
		for _, task := range b.Tasks() {
			decisions[task] = taskapi.Decision{Result: taskapi.Success}
		}
		if err := b.Complete(decisions); err != nil {
			return err
		}
		done <- len(b.Tasks())
		return nil
	}), taskproc.WithSize(size))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Handle("idle", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		return taskapi.Decision{Result: taskapi.Success}, nil
	})); err != nil {
		t.Fatal(err)
	}
	reg, err := taskprocotel.RegisterGauges(meter, client, taskprocotel.WithGaugeTimeout(patience))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reg.Unregister(); err != nil {
			t.Error(err)
		}
	}()

	// Before Start nothing is in flight and every task is Ready.
	observed := gauges(t, collect(t, reader))
	checkGauge(t, observed, "work", 0, pushed)
	checkGauge(t, observed, "idle", 0, 0)

	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		stopCtx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := client.Stop(stopCtx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	defer stop()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock() // before stop, when the test ends early
	var first int
	select {
	case first = <-polled:
	case <-time.After(patience):
		t.Fatal("no batch was polled")
	}
	if first != size {
		t.Fatalf("first batch of %d tasks, want %d", first, size)
	}

	observed = gauges(t, collect(t, reader))
	checkGauge(t, observed, "work", 1, pushed-size)
	checkGauge(t, observed, "idle", 0, 0)
	if len(observed) != 2 {
		t.Errorf("observed topics %v, want work and idle", observed)
	}

	unblock()
	for finished := 0; finished < pushed; {
		select {
		case n := <-done:
			finished += n
		case <-time.After(patience):
			t.Fatalf("%d of %d tasks completed", finished, pushed)
		}
	}
	stop()

	metrics := collect(t, reader)
	observed = gauges(t, metrics)
	checkGauge(t, observed, "work", 0, 0)
	checkGauge(t, observed, "idle", 0, 0)

	// The Recorder counted what the Manager's Stats counted.
	stats := client.Manager("work").Stats()
	checkCounter(t, metrics, "taskproc.tasks.polled", "{task}", map[string]int64{attrs("topic", "work"): pushed})
	checkCounter(t, metrics, "taskproc.tasks.completed", "{task}", map[string]int64{attrs("topic", "work", "result", "SUCCESS"): pushed})
	p := histogramPoints(t, metrics)[attrs("topic", "work")]
	var runs []uint64
	for _, n := range stats.Runs.Counts {
		runs = append(runs, uint64(n))
	}
	if int64(p.Count) != stats.Polled || !slices.Equal(p.BucketCounts, runs) {
		t.Errorf("duration: count %d, buckets %v; stats: %d batches, runs %v", p.Count, p.BucketCounts, stats.Polled, runs)
	}

	// A gauge that fails leaves its topic out of taskproc.ready.*, and
	// nothing else.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	observed = gauges(t, collect(t, reader))
	checkGauge(t, observed, "work", 0, -1)
	checkGauge(t, observed, "idle", 0, -1)
}

func TestObserveRefuses(t *testing.T) {
	_, provider := newReader(t)
	repo, err := taskansi.New(taskansi.SQLite, "otel-test")
	if err != nil {
		t.Fatal(err)
	}
	client, err := taskproc.New(repo, taskansi.Transact(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := taskprocotel.RegisterGauges[taskansi.DB](provider.Meter("test"), nil); err == nil {
		t.Error("RegisterGauges without a client succeeded")
	}
	if _, err := taskprocotel.RegisterGauges(nil, client); err == nil {
		t.Error("RegisterGauges without a meter succeeded")
	}
	if _, err := taskprocotel.RegisterGauges(provider.Meter("test"), client, taskprocotel.WithGaugeTimeout(0)); err == nil {
		t.Error("RegisterGauges with a zero gauge timeout succeeded")
	}
}
