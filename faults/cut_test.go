package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// cutRounds is how many times each call is cut at a random point.
const cutRounds = 60

// cutBudget bounds the random point: a call and its transaction send
// fewer bytes than this, so some rounds cut nothing. A push into a topic
// with a capacity may send more (capacityCutBudget): on a new connection
// it prepares its admitted statement, and when that finds no room it
// pushes again with task_admit. A poll may too (pollCutBudget): on a new
// connection it prepares its statement, whose text holds both of its
// branches and the report of its floor.
const cutBudget, capacityCutBudget, pollCutBudget = 2500, 4000, 3500

// cutRig is a database reached two ways: directly, to set up and check,
// and through a proxy that cuts the connection at a random byte.
type cutRig struct {
	direct, proxied *pgxpool.Pool
	proxy           *netproxy.Proxy
	repo            *taskpg.Repository
}

func newCutRig(t *testing.T) *cutRig {
	url := testdb.PostgresURL(t)
	proxy, proxiedURL, err := netproxy.ForURL(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	r := &cutRig{proxied: pool(t, proxiedURL), proxy: proxy}
	r.direct, r.repo = openFaultDB(t, url, "push", "poll", "complete")
	return r
}

func pool(t *testing.T, url string) *pgxpool.Pool {
	p, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// cutting runs call with the proxy set to cut after a random number of
// bytes, and restores the proxy afterwards.
func (r *cutRig) cutting(t *testing.T, call func() error) error {
	return r.cuttingWithin(t, cutBudget, call)
}

// cuttingWithin is cutting after a random number of bytes below budget.
// When the cut fired, it returns once the server is done with what it
// got: a COMMIT that reached the server before the cut may still be
// committing when the call has returned its error, and a check made then
// would see half of the transaction's writes.
func (r *cutRig) cuttingWithin(t *testing.T, budget int64, call func() error) error {
	r.proxy.CutAfter(1 + rand.Int64N(budget))
	defer r.proxy.Restore()
	err := call()
	if r.proxy.IsCut() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.proxy.WaitIdle(ctx); err != nil {
			t.Fatalf("the server did not close the connections that the cut dropped: %v", err)
		}
	}
	return err
}

// count counts the tasks of topic in state with reference (empty: any).
func (r *cutRig) count(t *testing.T, topic, reference string, state taskapi.State) int64 {
	counts, err := r.repo.Count(context.Background(), r.direct, taskapi.Total,
		taskapi.Counting{Topic: topic, Reference: reference, States: []taskapi.State{state}}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	return counts[topic][state].Count
}

// tally counts the rounds a cut failed and the rounds that went through.
type tally struct{ failed, passed int }

func (c *tally) add(err error) {
	if err != nil {
		c.failed++
	} else {
		c.passed++
	}
}

// check wants both outcomes seen: cuts that failed the call, and rounds
// that went through.
func (c tally) check(t *testing.T, call string) {
	t.Logf("%s: %d rounds cut, %d went through", call, c.failed, c.passed)
	if c.failed == 0 || c.passed == 0 {
		t.Errorf("%s: %d rounds failed and %d passed: the random cuts did not cover both", call, c.failed, c.passed)
	}
}

// TestCutPushLeavesAllOrNothing cuts a producer's transaction, which
// writes an order and pushes its five tasks, at random points: afterwards
// the order and its tasks exist together or not at all, and a call that
// returned no error committed.
func TestCutPushLeavesAllOrNothing(t *testing.T) {
	r := newCutRig(t)
	ctx := context.Background()
	var c tally
	for i := range cutRounds {
		order := fmt.Sprintf("order-%d", i)
		err := r.cutting(t, func() error {
			return taskpg.Transact(r.proxied)(ctx, func(tx taskpg.DB) error {
				if _, err := tx.Exec(ctx, "INSERT INTO fault_order (id) VALUES ($1)", order); err != nil {
					return err
				}
				creations := make([]taskapi.Creation, 5)
				for k := range creations {
					creations[k] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", order, k), Reference: order}
				}
				_, err := r.repo.Push(ctx, tx, "push", taskapi.Append, creations...)
				return err
			})
		})
		c.add(err)
		var orders int64
		if err := r.direct.QueryRow(ctx, "SELECT count(*) FROM fault_order WHERE id = $1", order).Scan(&orders); err != nil {
			t.Fatal(err)
		}
		tasks := r.count(t, "push", order, taskapi.Ready)
		if tasks != 5*orders || (err == nil && orders != 1) {
			t.Fatalf("round %d (error %v): %d orders and %d tasks: partial, or lost after success", i, err, orders, tasks)
		}
	}
	c.check(t, "Push")
}

// TestCutPushIntoACapacityNeitherOverfillsNorLeaks cuts pushes of one to
// three tasks into a topic with a capacity of 20, at random points, on a
// pool and inside a producer's transaction, while a consumer drains it now
// and then: the topic never holds more than 20 Ready tasks, a push is all
// or nothing and committed when it returned no error, and no cut keeps
// room taken: afterwards, pushes of one task fill it to exactly 20.
func TestCutPushIntoACapacityNeitherOverfillsNorLeaks(t *testing.T) {
	const capacity = 20
	r := newCutRig(t)
	ctx := context.Background()
	if _, err := r.repo.Initialize(ctx, r.direct, "capped"); err != nil {
		t.Fatal(err)
	}
	if err := r.repo.SetCapacity(ctx, r.direct, "capped", taskapi.Capacity{Ready: capacity}); err != nil {
		t.Fatal(err)
	}
	push := func(db taskpg.DB, id string, n int) error {
		creations := make([]taskapi.Creation, n)
		for k := range creations {
			creations[k] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", id, k)}
		}
		_, err := r.repo.Push(ctx, db, "capped", taskapi.Append, creations...)
		return err
	}
	var c tally
	for i := range cutRounds {
		n, id := 1+i%3, fmt.Sprintf("round-%d", i)
		before := r.count(t, "capped", "", taskapi.Ready)
		err := r.cuttingWithin(t, capacityCutBudget, func() error {
			if i%2 == 0 {
				return push(r.proxied, id, n)
			}
			return taskpg.Transact(r.proxied)(ctx, func(tx taskpg.DB) error { return push(tx, id, n) })
		})
		if !errors.Is(err, taskapi.ErrOverCapacity) {
			c.add(err)
		}
		after := r.count(t, "capped", "", taskapi.Ready)
		if after > capacity || (after != before && after != before+int64(n)) || (err == nil && after != before+int64(n)) {
			t.Fatalf("round %d (error %v): %d Ready tasks before a push of %d, %d after (capacity %d)", i, err, before, n, after, capacity)
		}
		if i%5 == 4 {
			tasks, err := r.repo.Poll(ctx, r.direct, "capped", 4)
			if err != nil {
				t.Fatal(err)
			}
			r.completeAll(t, "capped", tasks)
		}
	}
	c.check(t, "Push into a capacity")
	for i := 0; ; i++ {
		err := push(r.direct, fmt.Sprintf("fill-%d", i), 1)
		if errors.Is(err, taskapi.ErrOverCapacity) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if ready := r.count(t, "capped", "", taskapi.Ready); ready != capacity {
		t.Fatalf("filled to %d Ready tasks, want the capacity, %d", ready, capacity)
	}
}

// completeAll completes tasks of topic with Success, directly.
func (r *cutRig) completeAll(t *testing.T, topic string, tasks []taskapi.Task) {
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	if len(completions) > 0 {
		if err := r.repo.Complete(context.Background(), r.direct, topic, completions...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCutPollLeavesAllOrNothing cuts a poll of five tasks at random points:
// the five are claimed together or stay Ready.
func TestCutPollLeavesAllOrNothing(t *testing.T) {
	r := newCutRig(t)
	ctx := context.Background()
	pushReady(t, r, "poll", 5*cutRounds)
	var c tally
	for i := range cutRounds {
		before := r.count(t, "poll", "", taskapi.Active)
		err := r.cuttingWithin(t, pollCutBudget, func() error {
			_, err := r.repo.Poll(ctx, r.proxied, "poll", 5)
			return err
		})
		c.add(err)
		claimed := r.count(t, "poll", "", taskapi.Active) - before
		if (claimed != 0 && claimed != 5) || (err == nil && claimed != 5) {
			t.Fatalf("round %d (error %v): %d tasks claimed, want 0 or 5 (5 without error)", i, err, claimed)
		}
	}
	c.check(t, "Poll")
}

// TestCutCompleteLeavesAllOrNothing cuts the completing transaction of a
// batch of five, which also writes the user's effect rows, at random
// points: the five are completed with their effects, or stay Active with
// none.
func TestCutCompleteLeavesAllOrNothing(t *testing.T) {
	r := newCutRig(t)
	ctx := context.Background()
	pushReady(t, r, "complete", 5*cutRounds)
	var c tally
	for i := range cutRounds {
		tasks, err := r.repo.Poll(ctx, r.direct, "complete", 5)
		if err != nil || len(tasks) != 5 {
			t.Fatalf("poll: %d tasks, %v", len(tasks), err)
		}
		err = r.cutting(t, func() error { return completeWithEffects(ctx, r, tasks) })
		c.add(err)
		// One statement, one snapshot: a COMMIT whose reply the cut lost
		// may still land while the test looks, and two reads could see
		// either side of it.
		var effects, done int64
		err2 := r.direct.QueryRow(ctx, `
SELECT (SELECT count(*) FROM fault_effect WHERE sequence = ANY($1)),
       (SELECT count(*) FROM public.task WHERE topic = 'complete' AND sequence = ANY($1) AND state = $2)`,
			sequences(tasks), int16(taskapi.Succeeded)).Scan(&effects, &done)
		if err2 != nil {
			t.Fatal(err2)
		}
		if done != effects || (done != 0 && done != 5) || (err == nil && done != 5) {
			t.Fatalf("round %d (error %v): %d tasks completed, %d effects: partial, or lost after success", i, err, done, effects)
		}
	}
	c.check(t, "Complete")
}

// completeWithEffects completes tasks in one transaction with an effect
// row each, as a consumer's completing transaction does.
func completeWithEffects(ctx context.Context, r *cutRig, tasks []taskapi.Task) error {
	return taskpg.Transact(r.proxied)(ctx, func(tx taskpg.DB) error {
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			if _, err := tx.Exec(ctx, "INSERT INTO fault_effect (identifier, sequence, owner) VALUES ($1, $2, $3)",
				task.Identifier, task.Sequence, r.repo.Owner()); err != nil {
				return err
			}
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		return r.repo.Complete(ctx, tx, "complete", completions...)
	})
}

func pushReady(t *testing.T, r *cutRig, topic string, n int) {
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("%s-%d", topic, i)}
	}
	if _, err := r.repo.Push(context.Background(), r.direct, topic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
}

func sequences(tasks []taskapi.Task) []int64 {
	seqs := make([]int64, len(tasks))
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}
