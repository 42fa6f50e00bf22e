package taskprocotel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
	"github.com/taskrepo/taskrepo/taskprocotel"
)

// The Recorder turns taskproc's events into metrics. Here it is fed two
// events by hand, as a Client would, and a ManualReader collects them.
func ExampleNewRecorder() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	recorder, err := taskprocotel.NewRecorder(provider.Meter("example"))
	if err != nil {
		log.Fatal(err)
	}

	welcome := taskapi.Task{Sequence: 1, Identifier: "user-42", Input: "welcome"}
	spam := taskapi.Task{Sequence: 2, Identifier: "user-7", Input: "spam"}
	recorder.Observe(taskproc.Event{Kind: taskproc.EventPolled, Topic: "mail", Tasks: []taskapi.Task{welcome, spam}})
	recorder.Observe(taskproc.Event{
		Kind: taskproc.EventCompleted, Topic: "mail", Tasks: []taskapi.Task{welcome, spam},
		Decisions: taskproc.Decisions{
			welcome: {Result: taskapi.Success, Output: "sent"},
			spam:    {Result: taskapi.Filter},
		},
		Duration: 30 * time.Millisecond,
	})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range data.DataPoints {
				fmt.Printf("%s %s{%s} %d\n", m.Name, m.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
			}
		case metricdata.Histogram[float64]:
			for _, p := range data.DataPoints {
				fmt.Printf("%s %s{%s} count %d, sum %.3f, buckets %v\n", m.Name, m.Unit,
					p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count, p.Sum, p.BucketCounts)
			}
		}
	}
	// Unordered output:
	// taskproc.tasks.polled {task}{topic=mail} 2
	// taskproc.tasks.completed {task}{result=FILTER,topic=mail} 1
	// taskproc.tasks.completed {task}{result=SUCCESS,topic=mail} 1
	// taskproc.batch.duration s{topic=mail} count 1, sum 0.030, buckets [0 0 0 1 0 0 0 0 0 0]
}
