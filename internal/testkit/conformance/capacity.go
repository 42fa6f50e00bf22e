package conformance

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testCapacity checks the capacity of topics (taskapi.Capacitor): stored per
// topic, none by default, shared by every owner, gone with its topic; a
// push or a recreating revival whose tasks would take the topic's Ready
// tasks (deferred ones included) past it is refused with a *CapacityError
// and changes nothing, on a pool as inside a caller's transaction, whatever
// the insertion; tasks that come back to Ready in place are never refused
// but count; and concurrent producers never take a topic past it together.
func testCapacity[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["RoundTrip"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "u", "v"))
		c.wantCapacities(map[string]taskapi.Capacity{})
		c.set(topic, 10)
		c.set("u", 1)
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 10}, "u": {Ready: 1}})
		c.set(topic, 20)
		c.set("u", 0)
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 20}})
		c.capacitor = extension[taskapi.Capacitor[Tx]](t, c.owner("owner-b")) // shared by every owner
		c.wantCapacities(map[string]taskapi.Capacity{topic: {Ready: 20}})
	}

	all["UnknownTopic"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "gone"))
		c.set("gone", 5)
		c.destroy("gone")
		for _, unknown := range []string{"nowhere", "gone"} {
			wantErr(t, c.capacitor.SetCapacity(c.ctx, c.db, unknown, taskapi.Capacity{Ready: 5}), taskapi.ErrUnknownTopic)
		}
		c.wantCapacities(map[string]taskapi.Capacity{})
		// A topic registered again starts without one.
		c.initialize("gone")
		c.pushN("gone", 7)
		c.wantCapacities(map[string]taskapi.Capacity{})
	}

	all["RejectsBadValues"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			err := c.capacitor.SetCapacity(c.ctx, c.db, bad.value, taskapi.Capacity{Ready: 5})
			if !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("SetCapacity of a topic %s: error = %v, want %v", bad.name, err, taskapi.ErrInvalidArgument)
			}
		}
		err := c.capacitor.SetCapacity(c.ctx, c.db, topic, taskapi.Capacity{Ready: -1})
		if !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("SetCapacity(-1): error = %v, want %v", err, taskapi.ErrInvalidArgument)
		}
		c.wantCapacities(map[string]taskapi.Capacity{})
	}

	all["PushOverCapacityIsRefused"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "other"))
		c.set(topic, 3)
		c.pushN(topic, 2)
		before := c.snapshot(topic, "other")
		c.wantRefused(topic, 3, 4, taskapi.Append, 2)
		c.wantRefused(topic, 3, 5, taskapi.Append, 3)
		if !c.unchanged(before) {
			t.Fatal("a refused push changed the tasks")
		}
		c.pushN(topic, 1)
		c.wantRefused(topic, 3, 4, taskapi.Append, 1)
		c.pushN("other", 10) // a topic without a capacity takes any number
		c.wantReady(topic, 3)
	}

	all["BulkPushOverCapacityIsRefused"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 250)
		c.pushN(topic, 200)
		before := c.snapshot(topic)
		c.wantRefused(topic, 250, 400, taskapi.Append, 200)
		if !c.unchanged(before) {
			t.Fatal("a refused push changed the tasks")
		}
		c.pushN(topic, 50)
		c.wantReady(topic, 250)
	}

	all["DeferredTasksCount"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 2)
		later := time.Now().Add(time.Hour)
		c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "d", NotBefore: later})
		c.pushN(topic, 1)
		c.wantRefused(topic, 2, 3, taskapi.Append, 1)
	}

	all["PolledAndSuspendedTasksDoNotCount"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 2)
		c.pushN(topic, 2)
		c.poll(topic, 1)
		c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "s", Suspended: true})
		c.pushN(topic, 1)
		c.wantRefused(topic, 2, 3, taskapi.Append, 1)
		c.complete(topic, taskapi.Success, c.poll(topic, 2)...)
		c.pushN(topic, 2)
		c.wantReady(topic, 2)
	}

	all["SuspendedTasksNeedNoRoom"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 3)
		c.pushN(topic, 3)
		c.set(topic, 2) // over it already
		c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "s", Suspended: true})
		c.wantRefused(topic, 2, 4, taskapi.Append, 1)
	}

	all["ALoweredCapacityRefusesUntilDrained"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 100)
		c.pushN(topic, 5)
		c.set(topic, 3)
		c.wantRefused(topic, 3, 6, taskapi.Append, 1)
		c.poll(topic, 3)
		c.pushN(topic, 1)
		c.set(topic, 0)
		c.pushN(topic, 10)
		c.wantReady(topic, 13)
	}

	all["InsertionsThatRemoveAsManyFit"] = func(t *testing.T) {
		for _, insertion := range []taskapi.Insertion{taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
			t.Run(insertion.String(), func(t *testing.T) {
				c := capacityOf(setup(t, b, topic))
				c.set(topic, 2)
				c.pushIDs(topic, "a", "b")
				c.push(topic, insertion, taskapi.Creation{Identifier: "a", Input: "again"})
				c.wantReady(topic, 2)
				c.wantRefused(topic, 2, 3, insertion, 1)
			})
		}
	}

	all["InsideACallersTransaction"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 3)
		c.pushN(topic, 1)
		tx, end, err := b.Begin(c.ctx, c.db)
		c.must(err, "Begin")
		if _, err := c.repo.Push(c.ctx, tx, topic, taskapi.Append, creations("in", 1)...); err != nil {
			_ = end(false)
			t.Fatalf("Push inside the transaction: %v", err)
		}
		_, err = c.repo.Push(c.ctx, tx, topic, taskapi.Append, creations("over", 2)...)
		wantCapacityError(t, err, topic, 3, 4)
		// The caller's transaction goes on.
		if _, err := c.repo.Push(c.ctx, tx, topic, taskapi.Append, creations("fits", 1)...); err != nil {
			_ = end(false)
			t.Fatalf("Push after a refused one, inside the transaction: %v", err)
		}
		c.must(end(true), "Commit")
		c.wantReady(topic, 3)
	}

	all["TasksBackInPlaceCountButAreNotRefused"] = func(t *testing.T) {
		// With room for 2 more when the tasks come back, a push of 1 would
		// fit what was left before, and must count them.
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 4)
		c.pushIDs(topic, "a", "b")
		polled := c.poll(topic, 2)
		c.complete(topic, taskapi.Failure, polled...)
		c.pushIDs(topic, "c", "d")
		c.reviveTasks(topic, taskapi.ReviveReset, polled...)
		c.wantReady(topic, 4)
		c.wantRefused(topic, 4, 5, taskapi.Append, 1)
	}

	all["RecreatingRevivalsAreAdmitted"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		c.set(topic, 2)
		done := c.pushIDs(topic, "a")
		c.complete(topic, taskapi.Failure, c.poll(topic, 1)...)
		c.pushIDs(topic, "b", "c")
		before := c.snapshot(topic)
		_, err := c.repo.ReviveTasks(c.ctx, c.db, topic, taskapi.ReviveAppend, done...)
		wantCapacityError(t, err, topic, 2, 3)
		if !c.unchanged(before) {
			t.Fatal("a refused revival changed the tasks")
		}
		c.complete(topic, taskapi.Success, c.poll(topic, 1)...)
		c.reviveTasks(topic, taskapi.ReviveAppend, done...)
		c.wantReady(topic, 2)
	}

	all["ConcurrentProducersNeverExceedIt"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic, "free"))
		const producers = 16
		capacity := int64(raceTasks(b, 1000))
		c.set(topic, capacity)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, producers)
		for p := range producers {
			wg.Go(func() {
				refused := 0
				for i := 0; refused < 3; i++ {
					n := 1 + (p+i)%3
					_, err := c.repo.Push(c.ctx, c.db, topic, taskapi.Append, creations(fmt.Sprintf("p%d-%d", p, i), n)...)
					switch {
					case errors.Is(err, taskapi.ErrOverCapacity):
						refused++
					case errors.Is(err, taskapi.ErrConflict):
					case err != nil:
						errs <- err
						return
					default:
						admitted.Add(int64(n))
					}
					if p%4 == 0 { // producers of another topic are never refused
						if _, err := c.repo.Push(c.ctx, c.db, "free", taskapi.Append, creations("f", 1)...); err != nil {
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
		ready := c.ready(topic)
		if ready > capacity || ready != admitted.Load() || ready < capacity-2 {
			t.Fatalf("%d Ready tasks after %d admitted, want them equal, at most %d and at least %d",
				ready, admitted.Load(), capacity, capacity-2)
		}
	}

	// Pollers free room while producers push and a sampler counts: the
	// room freed is found by counts while other pushes are admitted, and
	// no committed state holds more Ready tasks than the capacity.
	all["ProducersAndPollersNeverExceedIt"] = func(t *testing.T) {
		c := capacityOf(setup(t, b, topic))
		const capacity, producers, pollers = 50, 8, 1
		attempts := raceTasks(b, 80)
		c.set(topic, capacity)
		var admitted, completed atomic.Int64
		var pushing, polling sync.WaitGroup
		errs := make(chan error, producers+pollers+1)
		for p := range producers {
			pushing.Go(func() {
				for i := range attempts {
					n := 1 + (p+i)%2
					_, err := c.repo.Push(c.ctx, c.db, topic, taskapi.Append, creations(fmt.Sprintf("p%d-%d", p, i), n)...)
					switch {
					case err == nil:
						admitted.Add(int64(n))
					case !errors.Is(err, taskapi.ErrOverCapacity) && !errors.Is(err, taskapi.ErrConflict):
						errs <- fmt.Errorf("push: %w", err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		for range pollers {
			polling.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					tasks, err := c.repo.Poll(c.ctx, c.db, topic, 2)
					if err == nil && len(tasks) > 0 {
						err = c.repo.Complete(c.ctx, c.db, topic, decisions(taskapi.Success, tasks...)...)
					}
					if err != nil && !errors.Is(err, taskapi.ErrConflict) {
						errs <- fmt.Errorf("poll and complete: %w", err)
						return
					}
					if err == nil {
						completed.Add(int64(len(tasks)))
					}
				}
			})
		}
		polling.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				infos, err := c.repo.Page(c.ctx, c.db, topic, taskapi.Listing{States: []taskapi.State{taskapi.Ready}},
					taskapi.Inception, 1<<20, taskapi.Forward)
				if err != nil {
					errs <- fmt.Errorf("page: %w", err)
					return
				}
				if len(infos) > capacity {
					errs <- fmt.Errorf("a sample saw %d Ready tasks, over the capacity of %d", len(infos), capacity)
					return
				}
			}
		})
		pushing.Wait()
		close(done)
		polling.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if ready := c.ready(topic); ready+completed.Load() != admitted.Load() || ready > capacity {
			t.Fatalf("%d Ready and %d completed of %d admitted, want them to add up, at most %d Ready",
				ready, completed.Load(), admitted.Load(), capacity)
		}
	}

	identifierCases(all, b, topic)
	openProducerCases(all, b, topic)
	conflictCases(all, b, topic)
	cases(t, all)
}

// capacities is a case's world with the Capacitor of Owner's repository.
type capacities[Tx any] struct {
	*world[Tx]
	capacitor taskapi.Capacitor[Tx]
}

func capacityOf[Tx any](e *env[Tx]) *capacities[Tx] {
	e.t.Helper()
	return &capacities[Tx]{world: worldOf(e), capacitor: extension[taskapi.Capacitor[Tx]](e.t, e.repo)}
}

// set sets the capacity of topic's Ready tasks alone.
func (c *capacities[Tx]) set(topic string, capacity int64) {
	c.t.Helper()
	c.setCapacity(topic, taskapi.Capacity{Ready: capacity})
}

func (c *capacities[Tx]) setCapacity(topic string, capacity taskapi.Capacity) {
	c.t.Helper()
	c.must(c.capacitor.SetCapacity(c.ctx, c.db, topic, capacity), "SetCapacity(%q, %+v)", topic, capacity)
}

func (c *capacities[Tx]) wantCapacities(want map[string]taskapi.Capacity) {
	c.t.Helper()
	got, err := c.capacitor.Capacities(c.ctx, c.db)
	c.must(err, "Capacities")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		c.t.Fatalf("Capacities = %v, want %v", got, want)
	}
}

func (c *capacities[Tx]) initialize(topic string) {
	c.t.Helper()
	_, err := c.repo.Initialize(c.ctx, c.db, topic)
	c.must(err, "Initialize(%q)", topic)
}

func (c *capacities[Tx]) destroy(topic string) {
	c.t.Helper()
	_, err := c.repo.Destroy(c.ctx, c.db, topic)
	c.must(err, "Destroy(%q)", topic)
}

// pushN appends n Ready tasks.
func (c *capacities[Tx]) pushN(topic string, n int) {
	c.t.Helper()
	c.push(topic, taskapi.Append, creations("n", n)...)
}

// ready counts the Ready tasks of topic.
func (c *capacities[Tx]) ready(topic string) int64 {
	c.t.Helper()
	infos, err := c.repo.Page(c.ctx, c.db, topic, taskapi.Listing{States: []taskapi.State{taskapi.Ready}},
		taskapi.Inception, 1<<20, taskapi.Forward)
	c.must(err, "Page(%q, READY)", topic)
	return int64(len(infos))
}

func (c *capacities[Tx]) wantReady(topic string, want int64) {
	c.t.Helper()
	if got := c.ready(topic); got != want {
		c.t.Fatalf("%d Ready tasks in %q, want %d", got, topic, want)
	}
}

// wantRefused pushes n tasks with insertion and wants them refused by a
// capacity of capacity, with count Ready tasks they would have made.
func (c *capacities[Tx]) wantRefused(topic string, capacity, count int64, insertion taskapi.Insertion, n int) {
	c.t.Helper()
	tasks, err := c.repo.Push(c.ctx, c.db, topic, insertion, creations("a", n)...)
	if tasks != nil {
		c.t.Errorf("a refused push returned tasks %v", tasks)
	}
	wantCapacityError(c.t, err, topic, capacity, count)
}

// wantCapacityError fails t unless err is a *CapacityError of the topic's
// bound with these figures, reached by errors.Is and errors.As.
func wantCapacityError(t *testing.T, err error, topic string, capacity, count int64) {
	t.Helper()
	wantIdentifierCapacityError(t, err, topic, "", capacity, count)
}

// wantIdentifierCapacityError fails t unless err is a *CapacityError of
// identifier's bound (the topic's when identifier is empty) with these
// figures, reached by errors.Is and errors.As.
func wantIdentifierCapacityError(t *testing.T, err error, topic, identifier string, capacity, count int64) {
	t.Helper()
	var ce *taskapi.CapacityError
	if !errors.Is(err, taskapi.ErrOverCapacity) || !errors.As(err, &ce) {
		t.Fatalf("error = %v, want a *CapacityError (%v)", err, taskapi.ErrOverCapacity)
	}
	want := taskapi.CapacityError{Topic: topic, Identifier: identifier, Capacity: capacity, Count: count}
	if *ce != want {
		t.Fatalf("error = %+v, want %+v", *ce, want)
	}
}

// creations returns n creations with identifiers from prefix.
func creations(prefix string, n int) []taskapi.Creation {
	cs := make([]taskapi.Creation, n)
	for i := range cs {
		cs[i] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", prefix, i)}
	}
	return cs
}
