package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// The consumers' timing.
const (
	demoPause       = 50 * time.Millisecond  // a loop's wait after an empty poll
	demoSQLitePause = 100 * time.Millisecond // the same on SQLite, where every poll takes the write lock
	demoReconcile   = 250 * time.Millisecond // how often consumers without wake-ups read the activations
	demoStopTimeout = 10 * time.Second       // how long the consumers may take to stop
)

// startConsumers starts the consumers: taskproc Clients, each an owner of
// its own, as separate processes would be, each with a handler for every
// demo topic. The owners' names are short enough for the tables of the
// other commands, and differ from run to run.
func (r *demoRun[Tx]) startConsumers(ctx context.Context) error {
	for i := range r.d.Consumers {
		client, err := r.newConsumer(fmt.Sprintf("demo-consumer-%d-%d", i+1, os.Getpid()))
		if err == nil {
			err = client.Start(ctx)
		}
		if err != nil {
			return fmt.Errorf("start consumer %d: %w", i+1, err)
		}
		r.clients = append(r.clients, client)
	}
	return nil
}

// newConsumer returns a Client of owner, not started.
func (r *demoRun[Tx]) newConsumer(owner string) (*taskproc.Client[Tx], error) {
	repo, err := r.db.NewRepo(owner)
	if err != nil {
		return nil, err
	}
	client, err := taskproc.New(repo, r.transact,
		taskproc.WithPause(r.pause()),
		taskproc.WithSize(2*demoBatch),
		taskproc.WithNotifier(r.notifier()),
		taskproc.WithReconcile(demoReconcile),
		taskproc.WithObserver(r.events),
		taskproc.WithLogger(slog.New(slog.DiscardHandler)), // the observer counts what went wrong
	)
	if err != nil {
		return nil, err
	}
	handlers, err := r.handlers()
	if err != nil {
		return nil, err
	}
	for _, t := range demoTopics {
		h := handlers[t.name]
		if err := client.Handle(t.name, h.handler, h.opts...); err != nil {
			return nil, fmt.Errorf("handle %s: %w", t.name, err)
		}
	}
	return client, nil
}

// notifier returns a consumer's source of wake-ups: PostgreSQL's
// notifications, each consumer on a connection of its own; elsewhere a
// timer that wakes the loops and reads the activations.
func (r *demoRun[Tx]) notifier() taskproc.Notifier {
	if r.db.Pool != nil && r.d.ListenURL != "" {
		return taskpg.NewNotifier(r.db.Pool, taskpg.WithListenURL(r.d.ListenURL))
	}
	if r.db.Pool != nil {
		return taskpg.NewNotifier(r.db.Pool)
	}
	return taskansi.NewPollNotifier(demoReconcile)
}

// pause is how long a consumer's loop waits after an empty poll.
func (r *demoRun[Tx]) pause() time.Duration {
	if r.db.Dialect == migrations.SQLite {
		return demoSQLitePause
	}
	return demoPause
}

// wakeups says how the consumers learn of new tasks.
func (r *demoRun[Tx]) wakeups() string {
	if r.db.Pool != nil {
		return "woken by PostgreSQL's notifications"
	}
	return fmt.Sprintf("polling every %v", r.pause())
}

// stopConsumers stops every consumer at once and waits until they have
// stopped, at most demoStopTimeout; what is still unsettled then goes back
// to READY.
func (r *demoRun[Tx]) stopConsumers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), demoStopTimeout)
	defer cancel()
	errs := make([]error, len(r.clients))
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			if err := c.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop consumer %s: %w", c.Owner(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
