package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/taskapi"
)

// raceDeadline bounds a whole case of the races: far longer than any of them
// takes, so that a case that hangs fails instead of stalling the suite.
const raceDeadline = 2 * time.Minute

// racers is how many goroutines each race runs.
const racers = 8

// raceTasks is how many tasks a race of n tasks pushes on b (so do the
// concurrent cases of capacity, limits and cancelling). A backend of
// one writer under the race detector pushes a quarter of them: SQLite's
// driver is Go, so the detector instruments the database engine itself,
// and a race took 35 times as long as without it (42 s instead of 1.2 s
// for 1,200 tasks), past the race's deadline on a busy machine. The
// interleavings of taskansi's own code are the same with fewer tasks; the
// full count still runs on SQLite without the detector and on every
// server backend.
func raceTasks[Tx any](b Backend[Tx], n int) int {
	if b.SingleWriter && racedetector.Enabled {
		return n / 4
	}
	return n
}

// testRaces runs many goroutines against one database at once: pollers and
// completers on the pool and in transactions, conditional pollers, pushes
// racing polls that hold tasks in open transactions, concurrent Replace of
// one identifier, push then conditional poll in one transaction. Every task
// must end with exactly one result, and no call may fail but with
// ErrConflict inside a transaction, which the goroutine answers by running
// its transaction again.
func testRaces[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["PollersAndCompletersOnThePool"] = func(t *testing.T) {
		r := newRace(t, b, 2400)
		r.run(func(g int, repo taskapi.Repository[Tx]) error {
			for {
				tasks, err := repo.Poll(r.ctx, r.db, "t", 50)
				if err != nil || len(tasks) == 0 {
					return err
				}
				if err := r.take(g, tasks); err != nil {
					return err
				}
				if err := repo.Complete(r.ctx, r.db, "t", r.decide(tasks)...); err != nil {
					return err
				}
			}
		})
		r.wantAllDone()
	}

	all["PollersAndCompletersInTransactions"] = func(t *testing.T) {
		r := newRace(t, b, 1600)
		r.run(func(g int, repo taskapi.Repository[Tx]) error {
			for {
				var tasks []taskapi.Task
				err := r.inTx(func(tx Tx) (err error) {
					if tasks, err = repo.Poll(r.ctx, tx, "t", 40); err != nil || len(tasks) == 0 {
						return err
					}
					return repo.Complete(r.ctx, tx, "t", r.decide(tasks)...)
				})
				if err != nil || len(tasks) == 0 {
					return err
				}
				if err := r.take(g, tasks); err != nil {
					return err
				}
			}
		})
		r.wantAllDone()
	}

	all["ConditionalPollersNeverShareAnIdentifier"] = func(t *testing.T) {
		r := newRace(t, b, 1200, 20)
		var (
			mu      sync.Mutex
			holders = map[string]int{}
		)
		var done completions
		r.run(func(g int, repo taskapi.Repository[Tx]) error {
			order := []taskapi.Order{taskapi.FIFO, taskapi.LIFO}[g%2]
			for r.pending() {
				next := done.next() // before the poll: a completion after it wakes the wait below
				tasks, err := repo.Poll(r.ctx, r.db, "t", 5, taskapi.SingularByIdentifier, order)
				if err != nil {
					return err
				}
				if len(tasks) == 0 {
					// Every free identifier is held: wait until a holder
					// completes, as a consumer woken by a notification
					// would, rather than poll again and again for the write
					// lock (a poll takes it on SQLite) that the holders
					// need to complete.
					select {
					case <-next:
					case <-time.After(100 * time.Millisecond):
					case <-r.ctx.Done():
					}
					continue
				}
				mu.Lock()
				for _, task := range tasks {
					if holder, held := holders[task.Identifier]; held {
						err = fmt.Errorf("poller %d received %v while poller %d holds identifier %s", g, task, holder, task.Identifier)
					}
					holders[task.Identifier] = g
				}
				mu.Unlock()
				if err == nil {
					err = r.take(g, tasks)
				}
				if err != nil {
					return err
				}
				mu.Lock() // before the completion commits: nobody can take them until then
				for _, task := range tasks {
					delete(holders, task.Identifier)
				}
				mu.Unlock()
				if err := repo.Complete(r.ctx, r.db, "t", r.decide(tasks)...); err != nil {
					return err
				}
				done.happened()
			}
			return nil
		})
		r.wantAllDone()
	}

	all["PushesGoThroughWhilePollsHoldTasksInOpenTransactions"] = func(t *testing.T) {
		if b.SingleWriter {
			t.Skip("one writer at a time: a push waits for the transaction that holds the write lock")
		}
		r := newRace(t, b, 400)
		allHolding, pushed := make(chan struct{}), make(chan struct{})
		var holders, pushes atomic.Int64
		holding := racers / 2
		if b.Exclusive { // one consumer alone: a second poll would wait for the first's rows
			holding = 1
		}
		r.run(func(g int, repo taskapi.Repository[Tx]) error {
			switch {
			case g%2 == 0 && g/2 >= holding:
				return nil
			case g%2 == 0: // a holder: polls in a transaction left open until the pushes are done
				return r.inTx(func(tx Tx) error {
					tasks, err := repo.Poll(r.ctx, tx, "t", 20)
					if err != nil {
						return err
					}
					if holders.Add(1) == int64(holding) {
						close(allHolding)
					}
					select {
					case <-pushed:
					case <-r.ctx.Done():
						return errors.New("the pushes did not go through while a poll held tasks in an open transaction")
					}
					if err := repo.Complete(r.ctx, tx, "t", r.decide(tasks)...); err != nil {
						return err
					}
					return r.take(g, tasks)
				})
			}
			select { // a pusher waits until every holder holds
			case <-allHolding:
			case <-r.ctx.Done():
				return r.ctx.Err()
			}
			for i := range 10 {
				id := fmt.Sprintf("new-%d-%d", g, i)
				insertion := []taskapi.Insertion{taskapi.Append, taskapi.Replace, taskapi.Supersede, taskapi.Delete}[i%4]
				var stored []taskapi.Task
				push := func(tx Tx) (err error) {
					stored, err = repo.Push(r.ctx, tx, "t", insertion, taskapi.Creation{Identifier: id})
					return err
				}
				var err error
				if i%2 == 0 {
					err = push(r.db)
				} else {
					err = r.inTx(push)
				}
				if err != nil {
					return err
				}
				r.expect(stored...)
				if pushes.Add(1) == racers/2*10 {
					close(pushed)
				}
			}
			return nil
		})
		if t.Failed() {
			return
		}
		if n := pushes.Load(); n != racers/2*10 {
			t.Fatalf("%d pushes went through, want %d", n, racers/2*10)
		}
		r.drain()
	}

	all["ConcurrentPushesOfOneIdentifierLeaveOneLive"] = func(t *testing.T) {
		for _, c := range []struct {
			insertion taskapi.Insertion
			live      []taskapi.State // the states in which at most one task may stay
			stored    bool            // every push stores a task
		}{
			{taskapi.Replace, []taskapi.State{taskapi.Ready, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded}, true},
			{taskapi.Supersede, []taskapi.State{taskapi.Ready}, true},
			{taskapi.Delete, []taskapi.State{taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended,
				taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant}, false},
		} {
			t.Run(c.insertion.String(), func(t *testing.T) {
				r := newRace(t, b, 0)
				var pushes atomic.Int64
				r.run(func(g int, repo taskapi.Repository[Tx]) error {
					for round := range 12 {
						push := func(tx Tx) error {
							_, err := repo.Push(r.ctx, tx, "t", c.insertion, taskapi.Creation{Identifier: "x", Input: fmt.Sprint(g, "-", round)})
							return err
						}
						var err error
						if (g+round)%2 == 0 {
							err = push(r.db)
						} else {
							err = r.inTx(func(tx Tx) error {
								if err := push(tx); err != nil {
									return err
								}
								time.Sleep(time.Millisecond) // stay open while others push
								return nil
							})
						}
						if err != nil {
							return err
						}
						pushes.Add(1)
					}
					return nil
				})
				infos := r.e.all("t")
				live := 0
				for _, info := range infos {
					for _, s := range c.live {
						if info.State == s {
							live++
						}
					}
				}
				if live != 1 {
					t.Errorf("%d pushes with %v of one identifier left %d tasks in %v, want 1", pushes.Load(), c.insertion, live, c.live)
				}
				if c.stored && int64(len(infos)) != pushes.Load() {
					t.Errorf("%d pushes stored %d tasks", pushes.Load(), len(infos))
				}
			})
		}
	}

	all["PushThenConditionalPollInOneTransaction"] = func(t *testing.T) {
		r := newRace(t, b, 0)
		r.run(func(g int, repo taskapi.Repository[Tx]) error {
			for round := range 10 {
				var tasks, pushed []taskapi.Task
				err := r.inTx(func(tx Tx) (err error) {
					pushed, err = repo.Push(r.ctx, tx, "t", taskapi.Append, taskapi.Creation{Identifier: fmt.Sprintf("g%d-%d", g, round)})
					if err != nil {
						return err
					}
					if tasks, err = repo.Poll(r.ctx, tx, "t", 10, taskapi.SingularByIdentifier); err != nil {
						return err
					}
					return repo.Complete(r.ctx, tx, "t", r.decide(tasks)...)
				})
				if err == nil { // what a transaction that ran again did before does not count
					r.expect(pushed...)
					err = r.take(g, tasks)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		r.drain()
	}

	cases(t, all)
}

// race is one race's world: a topic "t", the tasks pushed into it, and what
// each goroutine received.
type race[Tx any] struct {
	t       *testing.T
	e       *env[Tx]
	ctx     context.Context
	db      Tx
	repos   []taskapi.Repository[Tx]
	mu      sync.Mutex
	pushed  map[int64]bool // the tasks that must end with a result
	taken   map[int64]int  // by whom each task was received, once committed
	retries atomic.Int64   // transactions run again after ErrConflict
}

// newRace pushes n tasks, over identifiers distinct ones when none are
// given, and registers a repository per goroutine.
func newRace[Tx any](t *testing.T, b Backend[Tx], n int, identifiers ...int) *race[Tx] {
	t.Helper()
	n = raceTasks(b, n)
	e := setup(t, b, "t")
	ctx, cancel := context.WithTimeout(e.ctx, raceDeadline)
	t.Cleanup(cancel)
	r := &race[Tx]{t: t, e: e, ctx: ctx, db: e.db, pushed: map[int64]bool{}, taken: map[int64]int{}}
	spread := n
	if len(identifiers) > 0 {
		spread = identifiers[0]
	}
	for from := 0; from < n; from += 400 {
		creations := make([]taskapi.Creation, 0, 400)
		for i := from; i < min(n, from+400); i++ {
			creations = append(creations, taskapi.Creation{Identifier: fmt.Sprint("id-", i%spread), Input: fmt.Sprint(i)})
		}
		r.expect(e.push("t", taskapi.Append, creations...)...)
	}
	for g := range racers {
		r.repos = append(r.repos, e.owner(fmt.Sprint("racer-", g)))
	}
	t.Cleanup(func() {
		if n := r.retries.Load(); n > 0 {
			t.Logf("%d transactions ran again after ErrConflict", n)
		}
	})
	return r
}

// run runs fn on racers goroutines, each with a repository of its own, and
// fails t with every error they return.
func (r *race[Tx]) run(fn func(g int, repo taskapi.Repository[Tx]) error) {
	var wg sync.WaitGroup
	for g, repo := range r.repos {
		wg.Go(func() {
			if err := fn(g, repo); err != nil {
				r.t.Errorf("goroutine %d: %v", g, err)
			}
		})
	}
	wg.Wait()
}

// inTx runs fn in a transaction, and again while it, or the begin or the
// commit, fails with ErrConflict, which is what a caller does: the database
// aborted the transaction to resolve a deadlock, or (SQLite) another
// connection held the write lock for longer than busy_timeout.
func (r *race[Tx]) inTx(fn func(tx Tx) error) error {
	for {
		tx, end, err := r.e.b.Begin(r.ctx, r.db)
		if err == nil {
			err = fn(tx)
			if err == nil {
				err = end(true)
			} else {
				_ = end(false)
			}
		}
		if !errors.Is(err, taskapi.ErrConflict) || r.ctx.Err() != nil {
			return err
		}
		r.retries.Add(1)
	}
}

// expect records tasks that must end with a result.
func (r *race[Tx]) expect(tasks ...taskapi.Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, task := range tasks {
		r.pushed[task.Sequence] = true
	}
}

// take records that goroutine g received tasks and completed them, and fails
// when one was received before.
func (r *race[Tx]) take(g int, tasks []taskapi.Task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, task := range tasks {
		if before, ok := r.taken[task.Sequence]; ok {
			return fmt.Errorf("task %d received by goroutines %d and %d", task.Sequence, before, g)
		}
		r.taken[task.Sequence] = g
	}
	return nil
}

// pending reports whether tasks remain to be received.
func (r *race[Tx]) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.taken) < len(r.pushed) && r.ctx.Err() == nil
}

// decide returns a completion of each task with a result that its sequence
// picks.
func (r *race[Tx]) decide(tasks []taskapi.Task) []taskapi.Completion {
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: resultOf(task.Sequence)}}
	}
	return completions
}

func resultOf(sequence int64) taskapi.Result { return taskapi.Result(sequence % 4) }

// drain polls and completes on the pool what the race left Ready, then
// checks that every task ended with one result.
func (r *race[Tx]) drain() {
	r.t.Helper()
	for r.ctx.Err() == nil {
		tasks := r.e.poll("t", 500)
		if len(tasks) == 0 {
			break
		}
		if err := r.take(-1, tasks); err != nil {
			r.t.Fatal(err)
		}
		r.e.complete("t", taskapi.Success, tasks...)
	}
	for _, info := range r.e.all("t") {
		if info.State < taskapi.Failed || info.State > taskapi.Succeeded {
			if info.State != taskapi.Redundant {
				r.t.Errorf("task %d is %v after the race, want a result", info.Sequence, info.State)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for sequence := range r.pushed {
		if _, ok := r.taken[sequence]; !ok {
			r.t.Errorf("task %d was pushed and never received", sequence)
		}
	}
}

// wantAllDone checks that every task pushed was received once and now has
// the result that its sequence picks.
func (r *race[Tx]) wantAllDone() {
	r.t.Helper()
	if r.t.Failed() {
		return
	}
	if len(r.taken) != len(r.pushed) {
		r.t.Errorf("%d of %d tasks received", len(r.taken), len(r.pushed))
	}
	for _, info := range r.e.all("t") {
		if want := resultOf(info.Sequence).State(); info.State != want {
			r.t.Errorf("task %d is %v, want %v", info.Sequence, info.State, want)
		}
	}
}

// completions lets goroutines wait for the next completion of a race: the
// channel that next returns is closed by the first happened after it.
type completions struct {
	mu  sync.Mutex
	now chan struct{}
}

// next returns a channel closed at the next completion.
func (c *completions) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now == nil {
		c.now = make(chan struct{})
	}
	return c.now
}

// happened tells the waiters that a completion committed.
func (c *completions) happened() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now != nil {
		close(c.now)
		c.now = nil
	}
}
