package conformance

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// transactionLoad is the load of ProducersInTransactionsConflictNoMoreThanUncapped:
// producers that push twice in each of their transactions, beside a
// consumer that releases half of what it polls and completes the rest.
const (
	loadProducers = 16
	loadRounds    = 15
	loadCapacity  = 40
)

// conflictCases holds the case that compares the conflicts of producers
// in transactions on a topic with a capacity and one without, for backends
// whose pushes share the topic's admission. (Released tasks are never
// refused, so the topic may end over its capacity: other cases check it.)
func conflictCases[Tx any](all map[string]func(t *testing.T), b Backend[Tx], topic string) {
	all["ProducersInTransactionsConflictNoMoreThanUncapped"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, loadCapacity)
		c.initialize("uncapped")
		uncapped := c.transactionLoad("uncapped")
		capped := c.transactionLoad(topic)
		t.Logf("conflicts of %d transactions: %d without a capacity, %d with one (%d pushes refused)",
			loadProducers*loadRounds, uncapped.conflicts, capped.conflicts, capped.refused)
		if capped.conflicts > uncapped.conflicts {
			t.Errorf("producers in transactions met %d conflicts on a topic with a capacity, %d without: want no more",
				capped.conflicts, uncapped.conflicts)
		}
	}
}

// loadOutcome counts what went wrong under transactionLoad.
type loadOutcome struct {
	conflicts int64 // transactions that ErrConflict aborted
	refused   int64 // pushes that the capacity refused
}

// transactionLoad runs the producers and the consumer on topic and returns
// what they met; any other error fails the case.
func (c *capacities[Tx]) transactionLoad(topic string) loadOutcome {
	c.t.Helper()
	var conflicts, refused atomic.Int64
	errs := make(chan error, loadProducers+1)
	var producers sync.WaitGroup
	for p := range loadProducers {
		producers.Go(func() {
			for i := range loadRounds {
				err := c.pushTwice(topic, fmt.Sprintf("p%d-%d", p, i), &refused)
				switch {
				case errors.Is(err, taskapi.ErrConflict):
					conflicts.Add(1)
				case err != nil:
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var consumer sync.WaitGroup
	consumer.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := c.releaseHalf(topic); err != nil && !errors.Is(err, taskapi.ErrConflict) {
				errs <- err
				return
			}
		}
	})
	producers.Wait()
	close(done)
	consumer.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatalf("%s: %v", topic, err)
	}
	return loadOutcome{conflicts: conflicts.Load(), refused: refused.Load()}
}

// pushTwice pushes two tasks in a transaction, one push after the other,
// and commits; a push that the capacity refuses leaves the transaction
// usable and is counted.
func (c *capacities[Tx]) pushTwice(topic, prefix string, refused *atomic.Int64) error {
	tx, end, err := c.b.Begin(c.ctx, c.db)
	if err != nil {
		return err
	}
	for n := range 2 {
		_, err := c.repo.Push(c.ctx, tx, topic, taskapi.Append, creations(fmt.Sprintf("%s-%d", prefix, n), 1)...)
		switch {
		case errors.Is(err, taskapi.ErrOverCapacity):
			refused.Add(1)
		case err != nil:
			_ = end(false)
			return err
		}
	}
	return end(true)
}

// releaseHalf polls up to eight tasks, releases a quarter of them and
// completes the others.
func (c *capacities[Tx]) releaseHalf(topic string) error {
	tasks, err := c.repo.Poll(c.ctx, c.db, topic, 8)
	if err != nil || len(tasks) == 0 {
		return err
	}
	half := len(tasks) / 4
	if err := c.repo.Release(c.ctx, c.db, topic, tasks[:half]...); err != nil {
		return err
	}
	return c.repo.Complete(c.ctx, c.db, topic, decisions(taskapi.Success, tasks[half:]...)...)
}
