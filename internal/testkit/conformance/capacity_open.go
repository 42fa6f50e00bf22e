package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// openProducerPatience is how long the pushes that must not wait for
// another producer's open transaction are given: far longer than a few
// pushes take, even through PgBouncer beside CI's other heavy suites
// (4 s ran out there once), while the cases hold their transactions open
// until after it, so that a push that waited would wait it out.
const openProducerPatience = 20 * time.Second

// openProducerCases are the cases of a topic with a capacity whose
// producers keep their transactions open, for backends whose pushes share
// the topic's admission (Backend.SharedAdmission): no push waits for
// another producer's open transaction, whether a release came before it,
// another push counted the topic in its transaction, or the room that the
// last count found is used up; a push into a full topic is refused at
// once, counting the tasks of open transactions; producers in transactions
// do not deadlock.
func openProducerCases[Tx any](all map[string]func(t *testing.T), b Backend[Tx], topic string) {
	all["AReleaseMakesNoPushWaitForAnOpenProducer"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 1000)
		c.pushN(topic, 2)
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, creations("a1", 1)...)
		c.must(c.repo.Release(c.ctx, c.db, topic, c.poll(topic, 1)...), "Release")
		c.pushOn(tx, topic, taskapi.Append, creations("a2", 1)...) // the producer's transaction stays open
		ctx, cancel := context.WithTimeout(c.ctx, openProducerPatience)
		defer cancel()
		if _, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, creations("b", 1)...); err != nil {
			t.Fatalf("a push with room while another producer's transaction is open: %v, want it admitted at once", err)
		}
		end(true)
		c.wantReady(topic, 5)
	}

	all["AFullTopicRefusesAtOnceBesideAnOpenProducer"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 3)
		c.pushN(topic, 2)
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, creations("open", 1)...) // admitted, its transaction stays open
		c.wantRefusedAtOnce(topic, 3, 5, 2)                          // the open producer's task counts
		end(true)
		c.wantReady(topic, 3)
	}

	all["ProducersInTransactionsDoNotDeadlockAfterARelease"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 1000)
		c.pushN(topic, 1)
		txA, endA := c.begin()
		txB, endB := c.begin()
		c.pushOn(txA, topic, taskapi.Append, creations("a1", 1)...)
		c.pushOn(txB, topic, taskapi.Append, creations("b1", 1)...)
		c.must(c.repo.Release(c.ctx, c.db, topic, c.poll(topic, 1)...), "Release")
		c.pushInEach(topic, "a second push in each of two open transactions after a release", txA, txB)
		endA(true)
		endB(true)
		c.wantReady(topic, 5)
	}

	// A push that counts the topic (here the first after a new capacity)
	// inside an open transaction makes no other push wait for it.
	all["ACountInAnOpenTransactionMakesNoPushWait"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 1000)
		c.pushN(topic, 2)
		c.set(topic, 999) // the next push counts
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, creations("counted", 1)...)
		c.pushWithin(topic, "b", 1, "a push beside a transaction whose push counted the topic")
		end(true)
		c.wantReady(topic, 4)
	}

	// Once the room that the last count found is used up, a push that fits
	// (polls have freed room since) counts again without waiting for an
	// open producer transaction, and counts that producer's task.
	all["APushThatFitsAfterPollsCountsBesideAnOpenProducer"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 4)
		c.pushN(topic, 2)
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, creations("open", 1)...)
		c.pushN(topic, 1) // the room of the last count is used up
		c.complete(topic, taskapi.Success, c.poll(topic, 3)...)
		c.pushWithin(topic, "fits", 2, "a push that fits after polls, beside an open producer")
		c.wantRefusedAtOnce(topic, 4, 5, 2) // the open producer's task counts
		end(true)
		c.wantReady(topic, 3)
	}

	// Two producers in transactions whose pushes both count the topic do
	// not deadlock, nor wait for each other.
	all["ProducersInTransactionsDoNotDeadlockWhenBothCount"] = func(t *testing.T) {
		c := sharedAdmission(t, b, topic, 4)
		c.pushN(topic, 2)
		txA, endA := c.begin()
		txB, endB := c.begin()
		c.pushOn(txA, topic, taskapi.Append, creations("a1", 1)...)
		c.pushOn(txB, topic, taskapi.Append, creations("b1", 1)...)
		c.complete(topic, taskapi.Success, c.poll(topic, 2)...)
		c.pushInEach(topic, "a push in each of two open transactions that both count", txA, txB)
		endA(true)
		endB(true)
		c.wantReady(topic, 4)
	}
}

// wantRefusedAtOnce pushes n tasks on the pool and wants them refused by
// a capacity of capacity, counting count tasks, within
// openProducerPatience.
func (c *capacities[Tx]) wantRefusedAtOnce(topic string, capacity, count int64, n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, openProducerPatience)
	defer cancel()
	_, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, creations("over", n)...)
	wantCapacityError(c.t, err, topic, capacity, count)
}

// pushInEach pushes a task in each of txs at once and fails the case
// unless every push is admitted within openProducerPatience (what names
// them): a deadlock would abort one, a wait for the other end none.
func (c *capacities[Tx]) pushInEach(topic, what string, txs ...Tx) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, openProducerPatience)
	defer cancel()
	pushed := make(chan error, len(txs))
	for _, tx := range txs {
		go func() {
			_, err := c.repo.Push(ctx, tx, topic, taskapi.Append, creations("again", 1)...)
			pushed <- err
		}()
	}
	for range txs {
		if err := <-pushed; err != nil {
			c.t.Errorf("%s: %v, want each admitted (deadlock: %v)", what, err, errors.Is(err, taskapi.ErrConflict))
		}
	}
}

// pushWithin pushes n tasks of prefix on the pool and fails the case
// unless the push is admitted within openProducerPatience (what names it).
func (c *capacities[Tx]) pushWithin(topic, prefix string, n int, what string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, openProducerPatience)
	defer cancel()
	if _, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, creations(prefix, n)...); err != nil {
		c.t.Fatalf("%s: %v, want it admitted at once", what, err)
	}
}

// sharedAdmission sets up a case of openProducerCases: a topic with
// capacity, on a backend whose pushes share the topic's admission; it skips
// the others.
func sharedAdmission[Tx any](t *testing.T, b Backend[Tx], topic string, capacity int64) *capacities[Tx] {
	t.Helper()
	if !b.SharedAdmission {
		t.Skip("the backend's pushes take turns on the topic")
	}
	c := capacityOf(setup(t, b, topic))
	c.set(topic, capacity)
	return c
}
