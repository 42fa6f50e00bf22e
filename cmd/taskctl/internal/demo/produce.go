package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// demoPushAttempts bounds how often a producer tries a push that met a
// conflict (a deadlock, SQLite BUSY) again.
const demoPushAttempts = 5

// demoProducers is the producers at work: done is closed once they have
// all returned, and err is then the first error of one.
type demoProducers struct {
	done chan struct{}
	err  error
}

// startProducers starts the producers, one goroutine per topic.
func (r *demoRun[Tx]) startProducers(ctx context.Context) *demoProducers {
	p := &demoProducers{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = r.produce(ctx)
	}()
	return p
}

// produce pushes every topic's tasks and returns the first error.
func (r *demoRun[Tx]) produce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(demoTopics))
	var wg sync.WaitGroup
	for _, t := range demoTopics {
		wg.Go(func() {
			if err := r.produceTopic(ctx, t.name); err != nil {
				errs <- err
				cancel() // the first error stops the others
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// produceTopic pushes the tasks of topic in batches spread evenly over
// the producing time; demo.later gets one batch at once, deferred.
func (r *demoRun[Tx]) produceTopic(ctx context.Context, topic string) error {
	count, spread := r.plan[topic], r.d.Spread
	batches := (count + demoBatch - 1) / demoBatch
	if topic == demoLater {
		batches, spread = 1, 0
	}
	insertion := taskapi.Append
	if topic == demoPrices {
		insertion = taskapi.Replace
	}
	for k := range batches {
		if !demoSleepUntil(ctx, r.times.start.Add(spread*time.Duration(k)/time.Duration(batches))) {
			return ctx.Err()
		}
		creations := make([]taskapi.Creation, 0, demoBatch)
		for n := k * count / batches; n < (k+1)*count/batches; n++ {
			creations = append(creations, r.plan.demoCreation(topic, n, r.times.start))
		}
		if err := r.push(ctx, topic, insertion, creations); err != nil {
			return err
		}
	}
	return nil
}

// push pushes creations to topic in a transaction of its own, trying again
// after a conflict, and records when the push committed.
func (r *demoRun[Tx]) push(ctx context.Context, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) error {
	var tasks []taskapi.Task
	push := func(tx Tx) error {
		var err error
		tasks, err = r.db.Repo.Push(ctx, tx, topic, insertion, creations...)
		return err
	}
	err := r.transact(ctx, push)
	for attempt := 1; errors.Is(err, taskapi.ErrConflict) && attempt < demoPushAttempts; attempt++ {
		if !demoSleepUntil(ctx, time.Now().Add(time.Duration(attempt)*10*time.Millisecond)) {
			return ctx.Err()
		}
		err = r.transact(ctx, push)
	}
	if err != nil {
		return fmt.Errorf("push %d tasks to %s: %w", len(creations), topic, err)
	}
	r.rec.committed(topic, tasks, creations, time.Now())
	r.pushed.Add(int64(len(tasks)))
	return nil
}

// demoSleepUntil waits until t and reports true, or false when ctx ends first.
func demoSleepUntil(ctx context.Context, t time.Time) bool {
	return demoWork(ctx, time.Until(t)) == nil && ctx.Err() == nil
}
