package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// identifierCases are the cases of a capacity per identifier
// (Capacity.PerIdentifier): stored and read back with the topic's bound; a
// push that would leave more Ready tasks (deferred ones included) of one
// identifier is refused with a *CapacityError naming it, and changes
// nothing, all or nothing, on a pool as inside a caller's transaction;
// the other identifiers are not refused for it; both bounds apply
// together; concurrent producers of one identifier never take it past its
// bound, in any insertion mode; and on backends whose pushes share the
// admission, no push waits for another producer's open transaction.
func identifierCases[Tx any](all map[string]func(t *testing.T), b Backend[Tx], topic string) {
	all["PerIdentifierRoundTrip"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "u"))
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 5})
		c.setCapacity("u", taskapi.Capacity{Ready: 10, PerIdentifier: 3})
		c.wantCapacities(map[string]taskapi.Capacity{topic: {PerIdentifier: 5}, "u": {Ready: 10, PerIdentifier: 3}})
		c.setCapacity(topic, taskapi.Capacity{Ready: 7})
		c.setCapacity("u", taskapi.Capacity{PerIdentifier: 2})
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 7}, "u": {PerIdentifier: 2}})
		c.setCapacity("u", taskapi.Capacity{})
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 7}})
		err := c.capacitor.SetCapacity(c.ctx, c.db, topic, taskapi.Capacity{Ready: 3, PerIdentifier: -1})
		if !errors.Is(err, taskapi.ErrInvalidArgument) || !strings.Contains(err.Error(), "PerIdentifier") {
			t.Errorf("SetCapacity(PerIdentifier -1): error = %v, want %v naming PerIdentifier", err, taskapi.ErrInvalidArgument)
		}
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 7}})
		// A push without room of a topic that bounds only its identifiers
		// takes any number of identifiers.
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 1})
		c.pushN(topic, 20)
		c.wantReady(topic, 20)
	}

	all["AnIdentifierOverItsCapacityIsRefused"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "other"))
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 3})
		c.push(topic, taskapi.Append, same("x", 2)...)
		c.push(topic, taskapi.Append, same("y", 3)...)
		before := c.snapshot(topic, "other")
		c.wantIdentifierRefused(topic, "x", 3, 4, taskapi.Append, same("x", 2)...)
		// All or nothing: the push's tasks of other identifiers go too.
		c.wantIdentifierRefused(topic, "x", 3, 5, taskapi.Append,
			append(same("z", 1), append(same("x", 3), same("w", 1)...)...)...)
		c.wantIdentifierRefused(topic, "y", 3, 4, taskapi.Append, same("y", 1)...)
		if !c.unchanged(before) {
			t.Fatal("a refused push changed the tasks")
		}
		c.push(topic, taskapi.Append, same("x", 1)...) // x at its bound
		c.push(topic, taskapi.Append, same("z", 3)...) // another identifier is not refused for x
		c.push("other", taskapi.Append, same("x", 10)...)
		c.wantReadyOf(topic, "x", 3)
		c.wantReadyOf(topic, "z", 3)
	}

	all["AnIdentifiersDeferredTasksCountAndItsPolledOnesDoNot"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 3})
		c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "x", NotBefore: time.Now().Add(time.Hour)})
		c.push(topic, taskapi.Append, same("x", 2)...)
		c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "x", Suspended: true}) // needs no room
		c.wantIdentifierRefused(topic, "x", 3, 4, taskapi.Append, same("x", 1)...)
		c.complete(topic, taskapi.Success, c.poll(topic, 2)...)
		c.push(topic, taskapi.Append, same("x", 2)...)
		c.wantIdentifierRefused(topic, "x", 3, 4, taskapi.Append, same("x", 1)...)
	}

	all["AnIdentifiersInsertionsThatRemoveAsManyFit"] = func(t *testing.T) {
		for _, insertion := range []taskapi.Insertion{taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
			t.Run(insertion.String(), func(t *testing.T) {
				c := capacityOf(setup(t, b, topic))
				c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 1})
				c.push(topic, taskapi.Append, same("x", 1)...)
				c.push(topic, insertion, taskapi.Creation{Identifier: "x", Input: "again"})
				c.wantReadyOf(topic, "x", 1)
				c.wantIdentifierRefused(topic, "x", 1, 2, taskapi.Append, same("x", 1)...)
			})
		}
	}

	all["AnIdentifierRefusedInsideACallersTransaction"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: 2})
		c.push(topic, taskapi.Append, same("x", 1)...)
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, same("x", 1)...)
		_, err := c.repo.Push(c.ctx, tx, topic, taskapi.Append, same("x", 1)...)
		wantIdentifierCapacityError(t, err, topic, "x", 2, 3)
		// The caller's transaction goes on.
		c.pushOn(tx, topic, taskapi.Append, same("y", 2)...)
		end(true)
		c.wantReadyOf(topic, "x", 2)
		c.wantReadyOf(topic, "y", 2)
	}

	all["BothBoundsApplyTogether"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.setCapacity(topic, taskapi.Capacity{Ready: 5, PerIdentifier: 2})
		c.push(topic, taskapi.Append, same("x", 2)...)
		c.wantIdentifierRefused(topic, "x", 2, 3, taskapi.Append, same("x", 1)...) // the topic has room
		c.push(topic, taskapi.Append, same("y", 2)...)
		c.push(topic, taskapi.Append, same("z", 1)...)
		c.wantIdentifierRefused(topic, "", 5, 6, taskapi.Append, same("w", 1)...) // w has room
		c.setCapacity(topic, taskapi.Capacity{Ready: 10, PerIdentifier: 3})
		c.wantIdentifierRefused(topic, "x", 3, 4, taskapi.Append, same("x", 2)...)
		c.push(topic, taskapi.Append, same("x", 1)...)
		c.wantReady(topic, 6)
	}

	all["ConcurrentProducersOfOneIdentifierNeverExceedIt"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		const producers = 16
		capacity := int64(raceTasks(b, 400))
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: capacity})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, producers)
		for p := range producers {
			wg.Go(func() {
				refused := 0
				for i := 0; refused < 3; i++ {
					if i > 4*int(capacity) {
						errs <- fmt.Errorf("producer %d: %d pushes of the identifier, none refused past its capacity of %d", p, i, capacity)
						return
					}
					n := 1 + (p+i)%3
					var err error
					if p%2 == 0 { // half of them in transactions of their own
						err = c.pushInTransaction(topic, same("hot", n)...)
					} else {
						_, err = c.repo.Push(c.ctx, c.db, topic, taskapi.Append, same("hot", n)...)
					}
					var ce *taskapi.CapacityError
					switch {
					case errors.As(err, &ce) && ce.Identifier == "hot":
						refused++
					case errors.Is(err, taskapi.ErrConflict):
					case err != nil:
						errs <- err
						return
					default:
						admitted.Add(int64(n))
					}
					if p%4 == 1 { // another identifier is never refused for it
						if _, err := c.repo.Push(c.ctx, c.db, topic, taskapi.Append, same(fmt.Sprintf("cold-%d-%d", p, i), 1)...); err != nil {
							errs <- err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Push: %v", err)
		}
		ready := c.readyOf(topic, "hot")
		if ready > capacity || ready != admitted.Load() || ready < capacity-2 {
			t.Fatalf("%d Ready tasks of the identifier after %d admitted, want them equal, at most %d and at least %d",
				ready, admitted.Load(), capacity, capacity-2)
		}
	}

	all["ConcurrentInsertionsOfOneIdentifierNeverExceedIt"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		const producers, capacity = 16, 2
		attempts := raceTasks(b, 40)
		c.setCapacity(topic, taskapi.Capacity{PerIdentifier: capacity})
		insertions := []taskapi.Insertion{taskapi.Append, taskapi.Supersede, taskapi.Replace, taskapi.Delete}
		var wg sync.WaitGroup
		errs := make(chan error, producers)
		for p := range producers {
			wg.Go(func() {
				for i := range attempts {
					insertion := insertions[(p+i)%len(insertions)]
					_, err := c.repo.Push(c.ctx, c.db, topic, insertion, taskapi.Creation{Identifier: "hot", Input: fmt.Sprint(p, i)})
					var ce *taskapi.CapacityError
					switch {
					case err == nil, errors.Is(err, taskapi.ErrConflict):
					// Any insertion may be refused: the tasks of other
					// pushes in flight, which it cannot remove, count.
					case errors.As(err, &ce) && ce.Identifier == "hot":
					default:
						errs <- fmt.Errorf("push (%v): %w", insertion, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if ready := c.readyOf(topic, "hot"); ready > capacity || ready < 1 {
			t.Fatalf("%d Ready tasks of the identifier, want 1 to %d", ready, capacity)
		}
	}

	// A producer's open transaction that pushed an identifier makes no
	// push of that identifier wait: one with room is admitted at once,
	// one without is refused at once, counting the open producer's tasks.
	all["AnOpenProducerMakesNoPushOfItsIdentifierWait"] = func(t *testing.T) {
		if !b.SharedAdmission {
			t.Skip("the backend's pushes take turns on the topic")
		}
		c := capacityOf(setup(t, b, topic))
		c.setCapacity(topic, taskapi.Capacity{Ready: 1000, PerIdentifier: 4})
		c.push(topic, taskapi.Append, same("x", 1)...)
		tx, end := c.begin()
		c.pushOn(tx, topic, taskapi.Append, same("x", 2)...) // its transaction stays open
		ctx, cancel := context.WithTimeout(c.ctx, openProducerPatience)
		defer cancel()
		if _, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, same("x", 1)...); err != nil {
			t.Fatalf("a push of an identifier with room beside an open producer of it: %v, want it admitted at once", err)
		}
		_, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, same("x", 1)...)
		wantIdentifierCapacityError(t, err, topic, "x", 4, 5) // the open producer's tasks count
		if _, err := c.repo.Push(ctx, c.db, topic, taskapi.Append, same("y", 4)...); err != nil {
			t.Fatalf("a push of another identifier beside an open producer: %v, want it admitted at once", err)
		}
		end(true)
		c.wantReadyOf(topic, "x", 4)
	}
}

// same returns n creations of identifier.
func same(identifier string, n int) []taskapi.Creation {
	cs := make([]taskapi.Creation, n)
	for i := range cs {
		cs[i] = taskapi.Creation{Identifier: identifier, Input: fmt.Sprint(i)}
	}
	return cs
}

// pushInTransaction appends creations in a transaction of the case's own,
// committed when the push succeeds.
func (c *capacities[Tx]) pushInTransaction(topic string, creations ...taskapi.Creation) error {
	tx, end, err := c.b.Begin(c.ctx, c.db)
	if err != nil {
		return err
	}
	if _, err := c.repo.Push(c.ctx, tx, topic, taskapi.Append, creations...); err != nil {
		return errors.Join(err, end(false))
	}
	return end(true)
}

// readyOf counts the Ready tasks of identifier in topic.
func (c *capacities[Tx]) readyOf(topic, identifier string) int64 {
	c.t.Helper()
	infos, err := c.repo.Page(c.ctx, c.db, topic,
		taskapi.Listing{States: []taskapi.State{taskapi.Ready}, Identifier: identifier},
		taskapi.Inception, 1<<20, taskapi.Forward)
	c.must(err, "Page(%q, READY, %q)", topic, identifier)
	return int64(len(infos))
}

func (c *capacities[Tx]) wantReadyOf(topic, identifier string, want int64) {
	c.t.Helper()
	if got := c.readyOf(topic, identifier); got != want {
		c.t.Fatalf("%d Ready tasks of %q in %q, want %d", got, identifier, topic, want)
	}
}

// wantIdentifierRefused pushes creations with insertion and wants them
// refused by the bound of identifier (the topic's when empty), capacity,
// with count Ready tasks they would have made.
func (c *capacities[Tx]) wantIdentifierRefused(topic, identifier string, capacity, count int64, insertion taskapi.Insertion, creations ...taskapi.Creation) {
	c.t.Helper()
	tasks, err := c.repo.Push(c.ctx, c.db, topic, insertion, creations...)
	if tasks != nil {
		c.t.Errorf("a refused push returned tasks %v", tasks)
	}
	wantIdentifierCapacityError(c.t, err, topic, identifier, capacity, count)
}
