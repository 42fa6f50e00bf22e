package demo

import (
	"slices"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// demoTrace is what the demo knows of one of its tasks: when the push that
// stored it committed, when it was due, when a handler first started it and
// how often one ran it.
type demoTrace struct {
	topic     string
	committed time.Time // zero until the producer heard of the commit
	notBefore time.Time // demo.later
	started   time.Time // the first run's start; zero when it never ran
	runs      int
	fails     int // runs that fail transiently before one succeeds (demo.retries)
}

// succeeded reports whether the task's last run succeeded: a task of
// demo.retries that ran more often than it fails.
func (t *demoTrace) succeeded() bool { return t.runs > t.fails }

// demoRecorder keeps the traces of the demo's tasks by sequence (one
// sequence serves every topic). Producers and handlers write to it from
// many goroutines.
type demoRecorder struct {
	mu     sync.Mutex
	traces map[int64]*demoTrace
}

// newDemoRecorder returns an empty recorder.
func newDemoRecorder() *demoRecorder {
	return &demoRecorder{traces: map[int64]*demoTrace{}}
}

// trace returns the trace of sequence, made on first use. The caller holds
// the lock.
func (r *demoRecorder) trace(topic string, sequence int64) *demoTrace {
	t, ok := r.traces[sequence]
	if !ok {
		t = &demoTrace{topic: topic}
		r.traces[sequence] = t
	}
	return t
}

// committed records that tasks, pushed from creations, committed at at.
// A handler may have started one already.
func (r *demoRecorder) committed(topic string, tasks []taskapi.Task, creations []taskapi.Creation, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, task := range tasks {
		t := r.trace(topic, task.Sequence)
		t.committed = at
		if i < len(creations) {
			t.notBefore = creations[i].NotBefore
		}
	}
}

// started records that a handler starts a run of task now, and returns
// the run's number, from 1.
func (r *demoRecorder) started(topic string, task taskapi.Task) int {
	now := time.Now()
	in := parseDemoInput(task)
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.trace(topic, task.Sequence)
	if t.runs == 0 {
		t.started, t.fails = now, in.Fails
	}
	t.runs++
	return t.runs
}

// each calls fn with every trace of topic, under the lock.
func (r *demoRecorder) each(topic string, fn func(t *demoTrace)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.traces {
		if t.topic == topic {
			fn(t)
		}
	}
}

// waits returns, for the tasks of topics that ran, how long each waited
// from the commit of its push (or from its due time, when it was
// deferred) to the start of its first run; a start a clock's tick before
// the producer heard of the commit counts as no wait.
func (r *demoRecorder) waits(topics ...string) []time.Duration {
	var out []time.Duration
	for _, topic := range topics {
		r.each(topic, func(t *demoTrace) {
			from := t.committed
			if t.notBefore.After(from) {
				from = t.notBefore
			}
			if t.runs > 0 && !from.IsZero() {
				out = append(out, max(0, t.started.Sub(from)))
			}
		})
	}
	return out
}

// demoLatency summarizes waits, in milliseconds.
type demoLatency struct {
	Tasks int     `json:"tasks"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// demoLatencyOf returns the demoPercentiles of waits (nearest rank).
func demoLatencyOf(waits []time.Duration) demoLatency {
	l := demoLatency{Tasks: len(waits)}
	if len(waits) == 0 {
		return l
	}
	slices.Sort(waits)
	rank := func(p float64) float64 {
		i := int(p*float64(len(waits))+0.999999) - 1
		return demoMillis(waits[min(max(i, 0), len(waits)-1)])
	}
	l.P50, l.P90, l.P99, l.Max = rank(0.50), rank(0.90), rank(0.99), demoMillis(waits[len(waits)-1])
	return l
}

// demoMillis is d in milliseconds, to the microsecond.
func demoMillis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
