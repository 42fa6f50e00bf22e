package demo

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// demoSummary is what a run of the demo did, as --json prints it.
type demoSummary struct {
	Database    string             `json:"database"`
	Started     time.Time          `json:"started"` // the first push
	Pushed      int64              `json:"pushed"`
	Completed   int64              `json:"completed"` // tasks in FAILED to SUCCEEDED at the end
	Seconds     float64            `json:"seconds"`   // from the first push until every task settled
	PushSeconds float64            `json:"push_seconds"`
	Throughput  float64            `json:"throughput_per_second"` // completed tasks a second
	Consumers   []demoConsumer     `json:"consumers"`
	Topics      []demoTopicSummary `json:"topics"`
	// Latency is from the commit of a task's push to the start of its
	// first run, for the tasks of demo.orders, demo.prices, demo.pipeline
	// and demo.retries.
	Latency   demoLatency      `json:"latency"`
	Retries   demoRetrySummary `json:"retries"`
	Deferred  demoDeferred     `json:"deferred"`
	Paused    demoPausedTopic  `json:"paused"`
	Recovered map[string]int64 `json:"recovered_failures"` // by event, failures the runtime recovered from
	FirstFail string           `json:"first_failure,omitempty"`
}

// demoConsumer is one consumer: its owner and how many tasks it
// completed, a retried task once per run.
type demoConsumer struct {
	Owner     string `json:"owner"`
	Completed int64  `json:"completed"`
}

// demoTopicSummary is what became of a topic's tasks.
type demoTopicSummary struct {
	Topic   string           `json:"topic"`
	Shows   string           `json:"shows"`
	Pushed  int64            `json:"pushed"`
	Ran     int64            `json:"ran"`     // tasks a handler started at least once
	States  map[string]int64 `json:"states"`  // every task, by state
	Results map[string]int64 `json:"results"` // tasks completed during the run, by result
}

// demoRetrySummary is what became of the tasks of demo.retries.
type demoRetrySummary struct {
	Tasks       int            `json:"tasks"`
	MaxAttempts int            `json:"max_attempts"`
	Runs        int            `json:"runs"`
	FirstTry    int            `json:"first_try"`   // succeeded on the first run
	AfterRetry  int            `json:"after_retry"` // succeeded on a later run
	Exhausted   int            `json:"exhausted"`   // failed on every run allowed
	Example     *demoExhausted `json:"example_exhausted,omitempty"`
}

// demoExhausted is a task that ran out of attempts, as the database keeps
// it.
type demoExhausted struct {
	Sequence int64  `json:"sequence"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"` // in its output's log
	Last     string `json:"last_error"`
}

// demoDeferred is what became of the deferred batch of demo.later.
type demoDeferred struct {
	Tasks   int         `json:"tasks"`
	Ran     int         `json:"ran"`
	Early   int         `json:"early"` // started before their NotBefore
	DueFrom time.Time   `json:"due_from"`
	DueTo   time.Time   `json:"due_to"`
	Late    demoLatency `json:"late"` // from NotBefore to the start
}

// demoPausedTopic is what became of demo.paused.
type demoPausedTopic struct {
	Tasks         int     `json:"tasks"`
	Ran           int     `json:"ran"`
	PausedSeconds float64 `json:"paused_seconds"`
	RanPaused     int     `json:"ran_while_paused"` // started before it was resumed
}

// summarize gathers the summary from the database and the recorder.
func (r *demoRun[Tx]) summarize(ctx context.Context) (demoSummary, error) {
	status, err := r.status(ctx)
	if err != nil {
		return demoSummary{}, err
	}
	// The topics were made at the start: every completion in them is of
	// this run. The margin keeps a database clock a little behind ours
	// from losing some.
	results, err := r.db.Store.Results(ctx, r.times.start.Add(-time.Minute), time.Time{})
	if err != nil {
		return demoSummary{}, fmt.Errorf("read the results: %w", err)
	}
	s := demoSummary{
		Database:    r.db.Store.Shown(),
		Started:     r.times.start,
		Pushed:      r.pushed.Load(),
		Seconds:     r.times.settled.Sub(r.times.start).Seconds(),
		PushSeconds: r.times.pushed.Sub(r.times.start).Seconds(),
		Consumers:   r.consumers(),
		Latency:     demoLatencyOf(r.rec.waits(demoOrders, demoPrices, demoPipeline, demoRetries)),
		Deferred:    r.deferred(),
		Paused:      r.paused(),
	}
	s.Topics, s.Completed = r.topicSummaries(status, results)
	if s.Seconds > 0 {
		s.Throughput = demoRound(float64(s.Completed) / s.Seconds)
	}
	s.Seconds, s.PushSeconds = demoRound(s.Seconds), demoRound(s.PushSeconds)
	s.Recovered, s.FirstFail = r.events.failures()
	if s.Retries, err = r.retries(ctx); err != nil {
		return demoSummary{}, err
	}
	return s, nil
}

// topicSummaries are the summaries of the demo topics, and how many of
// their tasks completed.
func (r *demoRun[Tx]) topicSummaries(status demoStatus, results map[string]map[taskapi.Result]int64) ([]demoTopicSummary, int64) {
	var topics []demoTopicSummary
	var completed int64
	for _, t := range demoTopics {
		ts := r.topicSummary(t, status.counts[t.name], results[t.name])
		for state := taskapi.Failed; state <= taskapi.Succeeded; state++ {
			completed += ts.States[state.String()]
		}
		topics = append(topics, ts)
	}
	return topics, completed
}

// topicSummary is the summary of topic t from its counts and results.
func (r *demoRun[Tx]) topicSummary(t demoTopic, counts map[taskapi.State]taskapi.Summary, results map[taskapi.Result]int64) demoTopicSummary {
	ts := demoTopicSummary{Topic: t.name, Shows: t.shows, States: map[string]int64{}, Results: map[string]int64{}}
	for state, sum := range counts {
		ts.States[state.String()] = sum.Count
	}
	for result, n := range results {
		ts.Results[result.String()] = n
	}
	r.rec.each(t.name, func(tr *demoTrace) {
		if !tr.committed.IsZero() {
			ts.Pushed++
		}
		if tr.runs > 0 {
			ts.Ran++
		}
	})
	return ts
}

// consumers lists the consumers and how many tasks each completed.
func (r *demoRun[Tx]) consumers() []demoConsumer {
	out := make([]demoConsumer, 0, len(r.clients))
	for _, c := range r.clients {
		dc := demoConsumer{Owner: c.Owner()}
		for _, topic := range c.Topics() {
			dc.Completed += c.Manager(topic).Stats().Completed
		}
		out = append(out, dc)
	}
	return out
}

// deferred summarizes demo.later: when its tasks were due and when they
// started.
func (r *demoRun[Tx]) deferred() demoDeferred {
	d := demoDeferred{}
	r.rec.each(demoLater, func(t *demoTrace) {
		d.Tasks++
		if d.DueFrom.IsZero() || t.notBefore.Before(d.DueFrom) {
			d.DueFrom = t.notBefore
		}
		if t.notBefore.After(d.DueTo) {
			d.DueTo = t.notBefore
		}
		if t.runs > 0 {
			d.Ran++
			if t.started.Before(t.notBefore) {
				d.Early++
			}
		}
	})
	d.Late = demoLatencyOf(r.rec.waits(demoLater))
	return d
}

// paused summarizes demo.paused: how long it was paused and whether any
// of its tasks ran meanwhile.
func (r *demoRun[Tx]) paused() demoPausedTopic {
	p := demoPausedTopic{PausedSeconds: demoRound(r.times.resumed.Sub(r.times.start).Seconds())}
	r.rec.each(demoPaused, func(t *demoTrace) {
		p.Tasks++
		if t.runs > 0 {
			p.Ran++
			if t.started.Before(r.times.resumed) {
				p.RanPaused++
			}
		}
	})
	return p
}

// retries summarizes demo.retries from the recorder, and shows one task
// that ran out of attempts as the database keeps it.
func (r *demoRun[Tx]) retries(ctx context.Context) (demoRetrySummary, error) {
	rt := demoRetrySummary{MaxAttempts: demoMaxAttempts}
	r.rec.each(demoRetries, func(t *demoTrace) {
		rt.Tasks++
		rt.Runs += t.runs
		switch {
		case t.runs == 0:
		case !t.succeeded():
			rt.Exhausted++
		case t.runs == 1:
			rt.FirstTry++
		default:
			rt.AfterRetry++
		}
	})
	failed, err := r.db.Store.Page(ctx, demoRetries, taskapi.Listing{States: []taskapi.State{taskapi.Failed}}, taskapi.Inception, 1, taskapi.Forward)
	if err != nil {
		return rt, fmt.Errorf("read a failed task of %s: %w", demoRetries, err)
	}
	if len(failed) > 0 {
		ex := &demoExhausted{Sequence: failed[0].Sequence, State: failed[0].State.String()}
		if attempts, ok := taskproc.Attempts(failed[0].Output); ok && len(attempts) > 0 {
			ex.Attempts, ex.Last = len(attempts), attempts[len(attempts)-1].Error
		}
		rt.Example = ex
	}
	return rt, nil
}

// demoRound rounds x to three decimals, for JSON that people read too.
func demoRound(x float64) float64 {
	return math.Round(x*1000) / 1000
}
