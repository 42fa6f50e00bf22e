package demo

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// demoSQLiteConns bounds the connections to an SQLite database during the
// demo.
const demoSQLiteConns = 4

// demoRun is one run of the demo on a backend.
type demoRun[Tx any] struct {
	db       Database[Tx]
	d        Config
	plan     demoPlan
	transact func(context.Context, func(Tx) error) error // of producers and consumers (READ COMMITTED on MySQL)
	rec      *demoRecorder
	events   *demoEvents
	show     demoProgress
	clients  []*taskproc.Client[Tx]
	pushed   atomic.Int64 // tasks pushed so far
	times    demoTimes    // written by the run's own goroutine only
}

// demoTimes are the milestones of a run.
type demoTimes struct {
	start   time.Time // the producers begin
	pushed  time.Time // every task is pushed
	resumed time.Time // demo.paused is resumed
	settled time.Time // every task reached its final state
}

// newDemoRun prepares a run of d on b.
func newDemoRun[Tx any](db Database[Tx], c Config) *demoRun[Tx] {
	return &demoRun[Tx]{
		db: db, d: c, plan: planDemo(c.Tasks), transact: db.Transact,
		rec: newDemoRecorder(), events: newDemoEvents(), show: newDemoProgress(c.Stderr),
	}
}

// run resets the demo topics, runs producers and consumers until every
// task has settled, stops the consumers and prints the summary. Whatever
// happens, no consumer or producer is left running when it returns.
func (r *demoRun[Tx]) run(ctx context.Context) error {
	r.show.phase("%s: %d tasks in %d topics, %d consumers %s", r.db.Store.Shown(), r.plan.total(), len(demoTopics), r.d.Consumers, r.wakeups())
	r.limitSQLite()
	if err := r.reset(ctx); err != nil {
		return err
	}
	err := r.startConsumers(ctx)
	if err == nil {
		err = r.work(ctx)
	}
	if stopped := r.stopConsumers(ctx); err == nil {
		err = stopped
	}
	r.show.close()
	if err != nil {
		return err
	}
	s, err := r.summarize(ctx)
	if err != nil {
		return err
	}
	return report(r.d, s)
}

// limitSQLite bounds the connections to an SQLite database. SQLite has one
// writer at a time: more connections only wait for its lock in its busy
// handler, which sleeps up to 100 ms between tries, where the pool hands a
// connection on at once. (PostgreSQL and MySQL keep their pools as they
// are.)
func (r *demoRun[Tx]) limitSQLite() {
	if r.db.Dialect == migrations.SQLite {
		r.db.SQL.SetMaxOpenConns(demoSQLiteConns)
	}
}

// reset destroys the demo topics with their tasks and initializes them
// again, so that every run starts clean, and pauses demo.paused.
func (r *demoRun[Tx]) reset(ctx context.Context) error {
	for _, t := range demoTopics {
		if _, err := r.db.Store.Destroy(ctx, t.name); err != nil {
			return fmt.Errorf("reset topic %s: %w", t.name, err)
		}
		if _, err := r.db.Store.Initialize(ctx, t.name); err != nil {
			return fmt.Errorf("initialize topic %s: %w", t.name, err)
		}
	}
	if err := r.db.Store.SetActivation(ctx, demoPaused, taskapi.Paused); err != nil {
		return fmt.Errorf("pause %s: %w", demoPaused, err)
	}
	r.show.phase("topics demo.* initialized; %s is paused; %d tasks of %s are deferred by %v to %v",
		demoPaused, r.plan[demoLater], demoLater, demoDeferFrom, demoDeferFrom+demoDeferSpan)
	return nil
}

// work runs the producers while the consumers consume, and waits until
// every task has settled. The producers have returned when it does.
func (r *demoRun[Tx]) work(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.times.start = time.Now()
	p := r.startProducers(ctx)
	err := r.await(ctx, p)
	cancel()
	<-p.done
	return err
}
