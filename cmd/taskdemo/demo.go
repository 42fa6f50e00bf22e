package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

const (
	topic     = "demo-invoices"
	orders    = 500
	consumers = 3
)

// world is what the demo needs of a backend: its handle, its repositories,
// its transactions, and the business table the producer writes to and the
// consumers mark invoiced.
type world[Tx any] struct {
	db           Tx
	newRepo      func(owner string) (taskapi.Repository[Tx], error)
	inTx         taskproc.Transact[Tx]
	insertOrder  func(ctx context.Context, tx Tx, id string, total int) error
	markInvoiced func(ctx context.Context, tx Tx, id string) error
}

func run[Tx any](ctx context.Context, w world[Tx]) error {
	operator, err := w.newRepo("demo-operator")
	if err != nil {
		return err
	}
	if _, err := operator.Initialize(ctx, w.db, topic); err != nil {
		return err
	}
	start := time.Now()
	consumers, err := startConsumers(ctx, w)
	if err != nil {
		return err
	}
	defer consumers.stop()
	if err := produce(ctx, w, operator); err != nil {
		return err
	}
	fmt.Printf("producer: %d orders, each committed with its task, in %v\n", orders, time.Since(start).Round(time.Millisecond))
	if err := consumers.wait(); err != nil {
		return err
	}
	fmt.Printf("consumers: every order settled %v after the first push\n", time.Since(start).Round(time.Millisecond))
	consumers.stop()
	return operate(ctx, w, operator)
}

// produce writes each order and its task in one transaction.
func produce[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx]) error {
	run := time.Now().UnixNano()
	for i := range orders {
		id := fmt.Sprintf("order-%d-%d", run, i)
		err := w.inTx(ctx, func(tx Tx) error {
			if err := w.insertOrder(ctx, tx, id, 10+i%90); err != nil {
				return err
			}
			_, err := repo.Push(ctx, tx, topic, taskapi.Append, taskapi.Creation{
				Identifier: id, Input: fmt.Sprintf(`{"order":%q}`, id), Reference: fmt.Sprintf("customer-%d", i%7),
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fleet is the consumers: a taskproc Client each, of an owner of its own.
type fleet[Tx any] struct {
	clients []*taskproc.Client[Tx]
	owners  []string
	settled atomic.Int64
	done    chan struct{}
	stopped bool
}

// startConsumers starts the consumers, which invoice orders as they come.
func startConsumers[Tx any](ctx context.Context, w world[Tx]) (*fleet[Tx], error) {
	f := &fleet[Tx]{done: make(chan struct{})}
	count := taskproc.ListenerFunc(func(e taskproc.Event) {
		if e.Kind == taskproc.EventCompleted && f.settled.Add(int64(len(e.Tasks))) == orders {
			close(f.done)
		}
	})
	for c := range consumers {
		owner := fmt.Sprintf("demo-consumer-%d", c)
		client, err := newConsumer(w, owner, count)
		if err == nil {
			err = client.Start(ctx)
		}
		if err != nil {
			f.stop()
			return nil, err
		}
		f.clients, f.owners = append(f.clients, client), append(f.owners, owner)
	}
	return f, nil
}

// wait waits until every order is settled, and prints who did how many.
func (f *fleet[Tx]) wait() error {
	select {
	case <-f.done:
	case <-time.After(time.Minute):
		return errors.New("the consumers did not settle every order within a minute")
	}
	for c, client := range f.clients {
		fmt.Printf("  %s settled %d tasks\n", f.owners[c], client.Manager(topic).Stats().Completed)
	}
	return nil
}

// stop stops the consumers (once), giving their batches ten seconds.
func (f *fleet[Tx]) stop() {
	if f.stopped {
		return
	}
	f.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, client := range f.clients {
		if err := client.Stop(ctx); err != nil {
			fmt.Println("stop:", err)
		}
	}
}

// newConsumer returns a Client that invoices orders: it marks each order
// invoiced in the same transaction that completes its task.
func newConsumer[Tx any](w world[Tx], owner string, listener taskproc.Listener) (*taskproc.Client[Tx], error) {
	repo, err := w.newRepo(owner)
	if err != nil {
		return nil, err
	}
	client, err := taskproc.New(repo, w.inTx, taskproc.WithListener(listener), taskproc.WithPause(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	invoice := taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		return taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
			decisions := taskproc.Decisions{}
			for _, task := range b.Tasks() {
				if task.Sequence%25 == 0 { // a few invoices fail
					decisions[task] = taskapi.Decision{Result: taskapi.Failure, Output: "printer jam"}
					continue
				}
				if err := w.markInvoiced(ctx, tx, task.Identifier); err != nil {
					return nil, err
				}
				decisions[task] = taskapi.Decision{Result: taskapi.Success, Output: "invoiced"}
			}
			return decisions, nil
		})
	})
	return client, client.Handle(topic, invoice, taskproc.WithSize(50))
}

// operate prints the counts, revives the failures and purges what is done.
func operate[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx]) error {
	if err := printCounts(ctx, w, repo, "before purge"); err != nil {
		return err
	}
	revived, err := repo.Revive(ctx, w.db, topic, taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 1000)
	if err != nil {
		return err
	}
	fmt.Printf("operator: %d failed tasks set ready again\n", len(revived))
	purged, err := taskapi.PurgeBefore(ctx, repo, w.db, topic, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("operator: purged %d finished tasks created up to now\n", purged)
	return printCounts(ctx, w, repo, "after purge")
}

func printCounts[Tx any](ctx context.Context, w world[Tx], repo taskapi.Repository[Tx], when string) error {
	counts, err := repo.Count(ctx, w.db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
	if err != nil {
		return err
	}
	fmt.Printf("operator: counts %s:", when)
	for s := taskapi.Active; s <= taskapi.Redundant; s++ {
		if sum, ok := counts[topic][s]; ok {
			fmt.Printf(" %v=%d", s, sum.Count)
		}
	}
	fmt.Println()
	return nil
}
