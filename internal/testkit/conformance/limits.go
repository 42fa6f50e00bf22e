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

// testLimits checks the limits of topics (taskapi.Regulator): stored per
// topic, none by default, shared by every owner, gone with their topic; a
// poll takes a task only while the topic has fewer Active tasks than its
// Active limit and the task's identifier fewer than its PerIdentifier
// limit, counting every owner's; under a limit per identifier a poll takes
// the earliest due tasks of each identifier with room and is never held up
// by the identifiers at their limit; and concurrent pollers of many owners
// never go over a limit together.
func testLimits[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["RoundTrip"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic, "u"))
		l.wantLimits(map[string]taskapi.Limits{})
		l.set(topic, taskapi.Limits{Active: 5})
		l.set("u", taskapi.Limits{PerIdentifier: 2})
		l.wantLimits(map[string]taskapi.Limits{topic: {Active: 5}, "u": {PerIdentifier: 2}})
		l.set(topic, taskapi.Limits{Active: 7, PerIdentifier: 1})
		l.set("u", taskapi.Limits{})
		l.wantLimits(map[string]taskapi.Limits{topic: {Active: 7, PerIdentifier: 1}})
		l.regulator = extension[taskapi.Regulator[Tx]](t, l.owner("owner-b")) // shared by every owner
		l.wantLimits(map[string]taskapi.Limits{topic: {Active: 7, PerIdentifier: 1}})
	}

	all["UnknownTopicAndBadValues"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic, "gone"))
		l.set("gone", taskapi.Limits{Active: 1})
		if _, err := l.repo.Destroy(l.ctx, l.db, "gone"); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		for _, unknown := range []string{"nowhere", "gone"} {
			wantErr(t, l.regulator.SetLimits(l.ctx, l.db, unknown, taskapi.Limits{Active: 1}), taskapi.ErrUnknownTopic)
		}
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			err := l.regulator.SetLimits(l.ctx, l.db, bad.value, taskapi.Limits{Active: 1})
			if !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("SetLimits of a topic %s: error = %v, want %v", bad.name, err, taskapi.ErrInvalidArgument)
			}
		}
		for _, bad := range []taskapi.Limits{{Active: -1}, {PerIdentifier: -1}, {Active: 3, PerIdentifier: -2}} {
			wantErr(t, l.regulator.SetLimits(l.ctx, l.db, topic, bad), taskapi.ErrInvalidArgument)
		}
		l.wantLimits(map[string]taskapi.Limits{})
		// A topic registered again starts without limits.
		if _, err := l.repo.Initialize(l.ctx, l.db, "gone"); err != nil {
			t.Fatalf("Initialize: %v", err)
		}
		l.pushIDs("gone", "a", "b")
		if got := l.poll("gone", 5); len(got) != 2 {
			t.Fatalf("a topic registered again polled %d of 2 tasks", len(got))
		}
		l.wantLimits(map[string]taskapi.Limits{})
	}

	all["ActiveLimitCountsEveryOwner"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic, "free"))
		l.set(topic, taskapi.Limits{Active: 3})
		pushed := l.push(topic, taskapi.Append, creations("a", 10)...)
		l.push("free", taskapi.Append, creations("f", 10)...)
		first := l.poll(topic, 2)
		other := l.owner("owner-b")
		got, err := other.Poll(l.ctx, l.db, topic, 10)
		l.must(err, "Poll by owner-b")
		wantSeqs(t, "owner-b's poll at 2 of 3 Active", seqsOf(got...), seqsOf(pushed[2]))
		if more := l.poll(topic, 10); len(more) != 0 {
			t.Fatalf("a poll at the limit took %d tasks", len(more))
		}
		if got := l.poll("free", 10); len(got) != 10 { // another topic is not limited
			t.Fatalf("a topic without limits polled %d of 10 tasks", len(got))
		}
		l.complete(topic, taskapi.Success, first[0])
		more := l.poll(topic, 10)
		wantSeqs(t, "after a completion", seqsOf(more...), seqsOf(pushed[3]))
		l.wantActive(topic, 3)
		// Removing the limit lets the rest go.
		l.set(topic, taskapi.Limits{})
		if more := l.poll(topic, 10); len(more) != 6 {
			t.Fatalf("without a limit a poll took %d of 6 tasks", len(more))
		}
	}

	all["LoweredLimitKeepsActiveTasks"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.push(topic, taskapi.Append, creations("a", 6)...)
		polled := l.poll(topic, 4)
		l.set(topic, taskapi.Limits{Active: 2})
		l.wantActive(topic, 4)
		if more := l.poll(topic, 10); len(more) != 0 {
			t.Fatalf("a poll over the limit took %d tasks", len(more))
		}
		l.complete(topic, taskapi.Success, polled[:2]...)
		if more := l.poll(topic, 10); len(more) != 0 {
			t.Fatalf("a poll at the limit took %d tasks", len(more))
		}
		l.complete(topic, taskapi.Success, polled[2])
		if more := l.poll(topic, 10); len(more) != 1 {
			t.Fatalf("a poll one below the limit took %d tasks, want 1", len(more))
		}
	}

	all["PerIdentifierTakesTheEarliestOfEachKey"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.set(topic, taskapi.Limits{PerIdentifier: 2})
		tasks := l.pushIDs(topic, "a", "a", "b", "a", "c", "b", "b", "a")
		got := l.poll(topic, 10)
		wantSeqs(t, "FIFO poll under a limit of 2 per identifier", seqsOf(got...), seqsOf(tasks[0], tasks[1], tasks[2], tasks[4], tasks[5]))
		if more := l.poll(topic, 10); len(more) != 0 {
			t.Fatalf("a poll with every identifier at its limit took %v", seqsOf(more...))
		}
		l.complete(topic, taskapi.Success, tasks[0], tasks[2])
		got = l.poll(topic, 10, taskapi.LIFO)
		wantSeqs(t, "LIFO poll after a completion of a and b", seqsOf(got...), seqsOf(tasks[7], tasks[6]))
	}

	all["PerIdentifierIsNeverHeldUpByABacklog"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.set(topic, taskapi.Limits{PerIdentifier: 1})
		hot := make([]taskapi.Creation, 300)
		for i := range hot {
			hot[i] = taskapi.Creation{Identifier: "hot"}
		}
		l.push(topic, taskapi.Append, hot...)
		cold := l.pushIDs(topic, "cold")
		if got := l.poll(topic, 1); len(got) != 1 || got[0].Identifier != "hot" {
			t.Fatalf("first poll = %v, want hot's first task", got)
		}
		// Another owner, which has never seen the limit, and Owner both find
		// the cold task behind the hot backlog.
		other := l.owner("owner-b")
		got, err := other.Poll(l.ctx, l.db, topic, 1)
		l.must(err, "Poll by owner-b")
		wantSeqs(t, "owner-b's poll behind a blocked backlog", seqsOf(got...), seqsOf(cold...))
		if more := l.poll(topic, 5); len(more) != 0 {
			t.Fatalf("a poll with hot at its limit took %v", seqsOf(more...))
		}
	}

	all["PerIdentifierSetByAnotherOwner"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		other := l.owner("owner-b")
		l.pushIDs(topic, "a", "a", "a", "b")
		// Owner polls once without limits, then owner-b sets one; Owner's
		// next polls keep it.
		first := l.poll(topic, 1)
		if err := extension[taskapi.Regulator[Tx]](t, other).SetLimits(l.ctx, l.db, topic, taskapi.Limits{PerIdentifier: 1}); err != nil {
			t.Fatalf("SetLimits by owner-b: %v", err)
		}
		got := l.poll(topic, 5)
		if len(got) != 1 || got[0].Identifier != "b" {
			t.Fatalf("a poll under the new limit took %v, want b's task alone", got)
		}
		l.complete(topic, taskapi.Success, first...)
		// Removed by owner-b: Owner's polls take everything again.
		if err := extension[taskapi.Regulator[Tx]](t, other).SetLimits(l.ctx, l.db, topic, taskapi.Limits{}); err != nil {
			t.Fatalf("SetLimits by owner-b: %v", err)
		}
		if got := l.poll(topic, 5); len(got) != 2 {
			t.Fatalf("a poll without limits took %d of 2 tasks", len(got))
		}
	}

	all["WaitingTasksHoldNoneBack"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.set(topic, taskapi.Limits{PerIdentifier: 1})
		tasks := l.pushIDs(topic, "a", "a")
		if err := l.repo.Defer(l.ctx, l.db, topic, time.Now().Add(time.Hour), tasks[0]); err != nil {
			t.Fatalf("Defer: %v", err)
		}
		got := l.poll(topic, 5)
		wantSeqs(t, "poll with a's first task waiting", seqsOf(got...), seqsOf(tasks[1]))
	}

	all["LimitsAndConditions"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.set(topic, taskapi.Limits{Active: 2, PerIdentifier: 2})
		tasks := l.pushIDs(topic, "a", "a", "b", "c")
		got := l.poll(topic, 5, taskapi.SingularByIdentifier)
		wantSeqs(t, "a conditional poll under limits", seqsOf(got...), seqsOf(tasks[0], tasks[2]))
	}

	// AwaitRevival holds under limits too: a topic with an Active limit
	// and one with a limit per identifier as well, whose polls pick their
	// candidates by identifier.
	all["LimitsAndAwaitRevival"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic, "u"))
		l.set(topic, taskapi.Limits{Active: 3})
		l.set("u", taskapi.Limits{Active: 3, PerIdentifier: 2})
		for _, name := range []string{topic, "u"} {
			expired := l.task(name, "a", taskapi.Expired)
			tasks := l.pushIDs(name, "a", "b")
			got := l.poll(name, 5, taskapi.SingularByIdentifier, taskapi.AwaitRevival{})
			wantSeqs(t, "a poll of "+name+" that awaits revival under limits", seqsOf(got...), seqsOf(tasks[1]))
			l.reviveTasks(name, taskapi.ReviveReset, expired)
			got = l.poll(name, 5, taskapi.SingularByIdentifier, taskapi.AwaitRevival{})
			wantSeqs(t, "a poll of "+name+" that awaits revival under limits, after the revival", seqsOf(got...), seqsOf(expired))
		}
	}

	all["PollsInsideATransaction"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		l.set(topic, taskapi.Limits{Active: 2})
		l.push(topic, taskapi.Append, creations("a", 5)...)
		tx, end := l.begin()
		for i, want := range []int{1, 1, 0} {
			got, err := l.repo.Poll(l.ctx, tx, topic, 1)
			l.must(err, "Poll %d in a transaction", i)
			if len(got) != want {
				end(false)
				t.Fatalf("poll %d in a transaction took %d tasks, want %d", i, len(got), want)
			}
		}
		end(true)
		l.wantActive(topic, 2)
	}

	all["ALimitNoteSaysWhenLimitsHeldThePoll"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic, "free"))
		l.push("free", taskapi.Append, creations("f", 3)...)
		l.wantNoted("free", 5, 3, false)
		l.set(topic, taskapi.Limits{Active: 2})
		l.push(topic, taskapi.Append, creations("a", 5)...)
		l.wantNoted(topic, 1, 1, false) // room for it
		l.wantNoted(topic, 5, 1, true)  // the last room
		l.wantNoted(topic, 5, 0, true)  // at the limit
		// Under a limit per identifier alone, the three others have room; a
		// new task of a-0, which is Active, has none.
		l.set(topic, taskapi.Limits{PerIdentifier: 1})
		l.wantNoted(topic, 5, 3, false)
		l.pushIDs(topic, "a-0")
		l.wantNoted(topic, 5, 0, true)
		_, err := l.repo.Poll(l.ctx, l.db, topic, 5, (*taskapi.LimitNote)(nil))
		wantErr(t, err, taskapi.ErrInvalidArgument)
	}

	all["ConcurrentPollersNeverExceedThem"] = func(t *testing.T) {
		l := limitsOf(setup(t, b, topic))
		const active, perKey, keys = 5, 2, 10
		owners, perOwner := 4, 4
		if b.Exclusive { // one consumer alone: pollers wait for each other's rows
			owners, perOwner = 2, 1
		}
		l.set(topic, taskapi.Limits{Active: active, PerIdentifier: perKey})
		cs := make([]taskapi.Creation, raceTasks(b, 400))
		for i := range cs {
			cs[i] = taskapi.Creation{Identifier: fmt.Sprintf("k%d", i%keys)}
		}
		l.push(topic, taskapi.Append, cs...)
		var (
			mu    sync.Mutex
			held  = map[string]int{}
			total int
			done  atomic.Int64
			// failed stops every goroutine once one has failed
			failed atomic.Bool
			wg     sync.WaitGroup
			// pollers are the goroutines that poll
			pollers sync.WaitGroup
		)
		errs := make(chan error, 64)
		sampling := make(chan struct{})
		wg.Go(func() { // a sampler of the database's count, as an operator would look
			for {
				select {
				case <-sampling:
					return
				default:
				}
				if n, err := l.active(topic); err != nil || n > active {
					failed.Store(true)
					errs <- fmt.Errorf("the database counts %d Active tasks (%v), over the limit %d", n, err, active)
					return
				}
			}
		})
		for o := range owners {
			repo := l.owner(fmt.Sprintf("owner-%d", o))
			for g := range perOwner {
				// Pollers of both orders and several sizes, so that
				// concurrent polls do not all look at the same first tasks.
				order, size := taskapi.FIFO, 1+(o+g)%4
				if g%2 == 1 {
					order = taskapi.LIFO
				}
				pollers.Go(func() {
					for done.Load() < int64(len(cs)) && !failed.Load() {
						tasks, err := repo.Poll(l.ctx, l.db, topic, size, order)
						if err != nil && !errors.Is(err, taskapi.ErrConflict) {
							failed.Store(true)
							errs <- err
							return
						}
						// Counted from when the poll has committed until
						// before the completion is sent: never more than
						// the database counts.
						mu.Lock()
						for _, task := range tasks {
							held[task.Identifier]++
							total++
							if held[task.Identifier] > perKey || total > active {
								failed.Store(true)
								errs <- fmt.Errorf("%d Active tasks, %d of %s, over the limits %d and %d",
									total, held[task.Identifier], task.Identifier, active, perKey)
							}
						}
						mu.Unlock()
						for _, task := range tasks {
							mu.Lock()
							held[task.Identifier]--
							total--
							mu.Unlock()
							err := repo.Complete(l.ctx, l.db, topic, taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}})
							if err != nil {
								failed.Store(true)
								errs <- err
								return
							}
							done.Add(1)
						}
					}
				})
			}
		}
		pollers.Wait()
		close(sampling)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := l.inState(topic, taskapi.Succeeded); n != int64(len(cs)) {
			t.Fatalf("%d tasks Succeeded, want %d", n, len(cs))
		}
	}

	cases(t, all)
}

// limits is a case's world with the Regulator of Owner's repository.
type limits[Tx any] struct {
	*world[Tx]
	regulator taskapi.Regulator[Tx]
}

func limitsOf[Tx any](e *env[Tx]) *limits[Tx] {
	e.t.Helper()
	return &limits[Tx]{world: worldOf(e), regulator: extension[taskapi.Regulator[Tx]](e.t, e.repo)}
}

func (l *limits[Tx]) set(topic string, limits taskapi.Limits) {
	l.t.Helper()
	l.must(l.regulator.SetLimits(l.ctx, l.db, topic, limits), "SetLimits(%q, %+v)", topic, limits)
}

func (l *limits[Tx]) wantLimits(want map[string]taskapi.Limits) {
	l.t.Helper()
	got, err := l.regulator.Limits(l.ctx, l.db)
	l.must(err, "Limits")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		l.t.Fatalf("Limits = %v, want %v", got, want)
	}
}

// active counts the Active tasks of topic in one statement.
func (l *limits[Tx]) active(topic string) (int64, error) {
	counts, err := l.repo.Count(l.ctx, l.db, taskapi.Total,
		taskapi.Counting{Topic: topic, States: []taskapi.State{taskapi.Active}},
		taskapi.Unbounded)
	return counts[topic][taskapi.Active].Count, err
}

func (l *limits[Tx]) wantActive(topic string, want int64) {
	l.t.Helper()
	got, err := l.active(topic)
	l.must(err, "Count")
	if got != want {
		l.t.Fatalf("%d Active tasks in %q, want %d", got, topic, want)
	}
}

// inState counts the tasks of topic in state.
func (l *limits[Tx]) inState(topic string, state taskapi.State) int64 {
	l.t.Helper()
	infos, err := l.repo.Page(l.ctx, l.db, topic, taskapi.Listing{States: []taskapi.State{state}},
		taskapi.Inception, 1<<20, taskapi.Forward)
	l.must(err, "Page(%q, %v)", topic, state)
	return int64(len(infos))
}

// wantNoted polls up to size tasks of topic with a LimitNote and wants n
// tasks and the note's Held.
func (l *limits[Tx]) wantNoted(topic string, size, n int, held bool) {
	l.t.Helper()
	note := &taskapi.LimitNote{Held: !held} // a note given again learns afresh
	tasks, err := l.repo.Poll(l.ctx, l.db, topic, size, note)
	l.must(err, "Poll(%q, %d, note)", topic, size)
	if len(tasks) != n || note.Held != held {
		l.t.Fatalf("Poll(%q, %d) took %d tasks with Held %v, want %d with %v", topic, size, len(tasks), note.Held, n, held)
	}
}
