package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testCancel checks cancellation (taskapi.Canceller): a Ready task,
// deferred or not, and an Active one end Cancelled at once, with the
// reason in their output, never to be polled, settled by their owner,
// revived or reassigned; CancelIdentifier takes an identifier's Ready
// tasks only; ended tasks and other topics are left alone; the owner of a
// cancelled Active task finds it by Cancelled; an Active slot under limits
// is free at once; and under pollers that complete while others cancel,
// every task ends with exactly one of the two.
func testCancel[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["ReadyAndDeferredTasksEndAtOnce"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		soon := time.Now().Add(time.Second)
		tasks := c.push(topic, taskapi.Append,
			taskapi.Creation{Identifier: "a"},
			taskapi.Creation{Identifier: "b", NotBefore: soon},
			taskapi.Creation{Identifier: "c"})
		got := c.cancel(topic, "the caller went away", tasks[0].Sequence, tasks[1].Sequence)
		wantCancelled(t, got, tasks[:2], "")
		for _, task := range tasks[:2] {
			info := c.info(topic, task.Sequence)
			if info.State != taskapi.Cancelled || info.Output != "cancelled: the caller went away" ||
				info.Descent != taskapi.Ready || info.Completed.IsZero() {
				t.Errorf("cancelled task %d: state %v, descent %v, output %q, completed %v; want CANCELLED from READY, its reason, a completion time",
					task.Sequence, info.State, info.Descent, info.Output, info.Completed)
			}
		}
		time.Sleep(time.Until(soon.Add(50 * time.Millisecond))) // the deferred task would be due now
		wantSeqs(t, "a poll after the cancellation", sequences(c.poll(topic, 10)), sequences(tasks[2:]))
		if again := c.cancel(topic, "", tasks[0].Sequence); len(again) != 0 {
			t.Errorf("a second cancellation returned %v, want nothing", again)
		}
		if info := c.info(topic, tasks[0].Sequence); info.Output != "cancelled: the caller went away" {
			t.Errorf("a second cancellation changed the output to %q", info.Output)
		}
	}

	all["AnActiveTaskEndsAndItsOwnerIsRefused"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		pushed := c.pushIDs(topic, "a", "b")
		polled := c.poll(topic, 2)
		operator := extension[taskapi.Canceller[Tx]](t, c.owner("operator"))
		got, err := operator.Cancel(c.ctx, c.db, topic, "", polled[0].Sequence)
		c.must(err, "Cancel by another owner")
		wantCancelled(t, got, polled[:1], Owner)
		found, err := c.canceller.Cancelled(c.ctx, c.db, topic, pushed[0].Sequence, pushed[1].Sequence, 999)
		c.must(err, "Cancelled")
		wantSeqs(t, "Cancelled", found, sequences(polled[:1]))

		// Whatever the owner does next, the task's one result is Cancelled.
		done := []taskapi.Completion{{Task: polled[0], Decision: taskapi.Decision{Result: taskapi.Success, Output: "done"}}}
		var se *taskapi.StateError
		if err := c.repo.Complete(c.ctx, c.db, topic, done...); !errors.Is(err, taskapi.ErrNotActive) || !errors.As(err, &se) ||
			!slices.Equal(se.Sequences, sequences(polled[:1])) {
			t.Fatalf("Complete of a cancelled task: %v, want ErrNotActive naming it", err)
		}
		if err := c.repo.Release(c.ctx, c.db, topic, polled[0]); !errors.Is(err, taskapi.ErrNotActive) {
			t.Fatalf("Release of a cancelled task: %v, want ErrNotActive", err)
		}
		info := c.info(topic, polled[0].Sequence)
		if info.State != taskapi.Cancelled || info.Output != "cancelled" || info.Owner != Owner {
			t.Errorf("cancelled Active task: state %v, output %q, owner %q; want CANCELLED, \"cancelled\", %q", info.State, info.Output, info.Owner, Owner)
		}
		c.complete(topic, taskapi.Success, polled[1]) // its batch-mate is the owner's still
		if len(c.poll(topic, 10)) != 0 {
			t.Error("a poll after the cancellation found a task")
		}
	}

	all["SuspendedTasksEndAndNoJunctionWakesThem"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		pushed := c.push(topic, taskapi.Append, taskapi.Creation{Identifier: "waits", Suspended: true})
		c.pushIDs(topic, "runs")
		c.complete(topic, taskapi.Suspension, c.poll(topic, 1)...)
		suspended, err := c.repo.Page(c.ctx, c.db, topic, taskapi.Listing{States: []taskapi.State{taskapi.Suspended}}, taskapi.Inception, 10, taskapi.Forward)
		if c.must(err, "Page"); len(suspended) != 2 {
			t.Fatalf("setup: %d SUSPENDED tasks, want 2", len(suspended))
		}
		got := c.cancel(topic, "no longer wanted", suspended[0].Sequence, suspended[1].Sequence)
		wantCancelledFrom(t, got, []taskapi.Task{suspended[0].Task, suspended[1].Task}, taskapi.Suspended, "")
		for _, s := range suspended {
			info := c.info(topic, s.Sequence)
			if info.State != taskapi.Cancelled || info.Descent != taskapi.Suspended || info.Output != "cancelled: no longer wanted" {
				t.Errorf("cancelled SUSPENDED task %d: state %v, descent %v, output %q; want CANCELLED from SUSPENDED with its reason",
					s.Sequence, info.State, info.Descent, info.Output)
			}
		}
		if _, err := c.repo.ReviveTasks(c.ctx, c.db, topic, taskapi.ReviveReset, pushed[0]); err == nil {
			t.Error("a cancelled SUSPENDED task was revived")
		}
		if len(c.poll(topic, 10)) != 0 {
			t.Error("a poll after the cancellation of SUSPENDED tasks found a task")
		}
	}

	all["EndedTasksAndOtherTopicsAreLeftAlone"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic, "u"))
		tasks := c.pushIDs(topic, "ok", "bad", "same", "ready")
		c.complete(topic, taskapi.Success, c.poll(topic, 1)...)
		c.complete(topic, taskapi.Failure, c.poll(topic, 1)...)
		c.push(topic, taskapi.Supersede, taskapi.Creation{Identifier: "same"}) // tasks[2] goes Redundant
		other := c.pushIDs("u", "x")
		before := c.all(topic)
		got := c.cancel(topic, "", tasks[0].Sequence, tasks[1].Sequence, tasks[2].Sequence, other[0].Sequence+100, -1)
		if len(got) != 0 {
			t.Errorf("Cancel of ended tasks and absent sequences returned %v, want nothing", got)
		}
		if diff := diffInfos(c.all(topic), before); diff != "" {
			t.Errorf("Cancel of ended tasks changed the topic: %s", diff)
		}
		wantCancelled(t, c.cancel("u", "", other[0].Sequence), other, "")
		c.wantState(topic, tasks[3].Sequence, taskapi.Ready)
		if got := c.cancel(topic, ""); len(got) != 0 {
			t.Errorf("Cancel of no sequences returned %v", got)
		}
	}

	all["CancelIdentifierTakesItsReadyTasksOnly"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic, "u"))
		later := time.Now().Add(time.Hour)
		running := c.pushIDs(topic, "x")
		c.poll(topic, 1)
		done := c.pushIDs(topic, "x")
		c.complete(topic, taskapi.Success, c.poll(topic, 1)...)
		ready := c.push(topic, taskapi.Append,
			taskapi.Creation{Identifier: "x"}, taskapi.Creation{Identifier: "y"},
			taskapi.Creation{Identifier: "x", NotBefore: later}, taskapi.Creation{Identifier: "x"})
		elsewhere := c.pushIDs("u", "x")
		got, err := c.canceller.CancelIdentifier(c.ctx, c.db, topic, "x", "tenant left")
		c.must(err, "CancelIdentifier")
		wantCancelled(t, got, []taskapi.Task{ready[0], ready[2], ready[3]}, "")
		c.wantState(topic, running[0].Sequence, taskapi.Active)
		c.wantState(topic, done[0].Sequence, taskapi.Succeeded)
		c.wantState(topic, ready[1].Sequence, taskapi.Ready)
		c.wantState("u", elsewhere[0].Sequence, taskapi.Ready)
		if info := c.info(topic, ready[2].Sequence); info.Output != "cancelled: tenant left" {
			t.Errorf("output of a cancelled task = %q", info.Output)
		}
		got, err = c.canceller.CancelIdentifier(c.ctx, c.db, topic, "nobody", "")
		c.must(err, "CancelIdentifier of an identifier without tasks")
		if len(got) != 0 {
			t.Errorf("CancelIdentifier of an identifier without tasks returned %v", got)
		}
	}

	all["UnknownTopicAndBadArgumentsChangeNothing"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		tasks := c.pushIDs(topic, "a")
		wantErr(t, c.cancelErr("nowhere", "", tasks[0].Sequence), taskapi.ErrUnknownTopic)
		_, err := c.canceller.CancelIdentifier(c.ctx, c.db, "nowhere", "a", "")
		wantErr(t, err, taskapi.ErrUnknownTopic)
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			if err := c.cancelErr(bad.value, "", 1); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Cancel in a topic %s: %v, want ErrInvalidArgument", bad.name, err)
			}
			if _, err := c.canceller.Cancelled(c.ctx, c.db, bad.value, 1); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Cancelled in a topic %s: %v, want ErrInvalidArgument", bad.name, err)
			}
		}
		for _, bad := range badNames(taskapi.MaxIdentifierLength) {
			if _, err := c.canceller.CancelIdentifier(c.ctx, c.db, topic, bad.value, ""); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("CancelIdentifier of an identifier %s: %v, want ErrInvalidArgument", bad.name, err)
			}
		}
		for _, reason := range []string{"nul\x00byte", "bad\xffutf8"} {
			wantErr(t, c.cancelErr(topic, reason, tasks[0].Sequence), taskapi.ErrInvalidArgument)
			_, err := c.canceller.CancelIdentifier(c.ctx, c.db, topic, "a", reason)
			wantErr(t, err, taskapi.ErrInvalidArgument)
		}
		c.wantState(topic, tasks[0].Sequence, taskapi.Ready)
		found, err := c.canceller.Cancelled(c.ctx, c.db, "nowhere", tasks[0].Sequence)
		if err != nil || len(found) != 0 {
			t.Errorf("Cancelled in an unknown topic = %v, %v; want nothing", found, err)
		}
	}

	all["ACancelledTaskIsNeverRevivedOrReassigned"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		tasks := c.pushIDs(topic, "a", "b")
		c.cancel(topic, "", tasks[0].Sequence)
		_, err := c.repo.ReviveTasks(c.ctx, c.db, topic, taskapi.ReviveAppend, tasks[0])
		wantErr(t, err, taskapi.ErrStateMismatch)
		wantErr(t, c.repo.Reassign(c.ctx, c.db, topic, taskapi.Assignment{Task: tasks[0], Result: taskapi.Success}), taskapi.ErrStateMismatch)
		_, err = c.repo.Revive(c.ctx, c.db, topic, taskapi.ReviveAppend, taskapi.Cancelled, taskapi.Range{From: taskapi.Inception, To: taskapi.MaxSequence}, 10)
		wantErr(t, err, taskapi.ErrInvalidArgument)
		c.wantState(topic, tasks[0].Sequence, taskapi.Cancelled)

		// Operators see it, count it and purge it with the ended tasks.
		listed, err := c.repo.Page(c.ctx, c.db, topic, taskapi.Listing{States: []taskapi.State{taskapi.Cancelled}}, taskapi.Inception, 10, taskapi.Forward)
		c.must(err, "Page of Cancelled tasks")
		if len(listed) != 1 || listed[0].Sequence != tasks[0].Sequence {
			t.Errorf("Page of Cancelled tasks = %v, want task %d", listed, tasks[0].Sequence)
		}
		counts, err := c.repo.Count(c.ctx, c.db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Range{From: taskapi.Inception, To: taskapi.MaxSequence})
		c.must(err, "Count")
		if got := counts[topic][taskapi.Cancelled].Count; got != 1 {
			t.Errorf("Count of Cancelled tasks = %d, want 1", got)
		}
		n, err := c.repo.Purge(c.ctx, c.db, topic, taskapi.Range{From: taskapi.Inception, To: taskapi.MaxSequence})
		c.must(err, "Purge")
		if n != 1 {
			t.Errorf("Purge in the default states purged %d tasks, want the cancelled one", n)
		}
		c.wantState(topic, tasks[1].Sequence, taskapi.Ready)
	}

	all["ACancelledActiveTaskFreesItsSlotUnderLimits"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		c.must(extension[taskapi.Regulator[Tx]](t, c.repo).SetLimits(c.ctx, c.db, topic, taskapi.Limits{Active: 1}), "SetLimits")
		c.pushIDs(topic, "a", "b")
		first := c.poll(topic, 2)
		if len(first) != 1 || len(c.poll(topic, 1)) != 0 {
			t.Fatalf("the Active limit of 1 let %d tasks through", len(first))
		}
		c.cancel(topic, "", first[0].Sequence)
		if next := c.poll(topic, 2); len(next) != 1 {
			t.Fatalf("a poll after the Active task was cancelled took %d tasks, want 1", len(next))
		}
	}

	all["InsideATransactionThatRollsBackNothingHappens"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		tasks := c.pushIDs(topic, "a", "a")
		tx, end, err := b.Begin(c.ctx, c.db)
		c.must(err, "Begin")
		got, err := c.canceller.Cancel(c.ctx, tx, topic, "", tasks[0].Sequence)
		c.must(err, "Cancel inside a transaction")
		wantCancelled(t, got, tasks[:1], "")
		got, err = c.canceller.CancelIdentifier(c.ctx, tx, topic, "a", "")
		c.must(err, "CancelIdentifier inside a transaction")
		wantCancelled(t, got, tasks[1:], "")
		c.must(end(false), "Rollback")
		c.wantState(topic, tasks[0].Sequence, taskapi.Ready)
		c.wantState(topic, tasks[1].Sequence, taskapi.Ready)
	}

	all["CompletionsAndCancellationsNeverBothWin"] = func(t *testing.T) {
		c := cancellerOf(setup(t, b, topic))
		c.cancelRace(t)
	}

	cases(t, all)
}

// canceller is a case's world with the Canceller of its repository.
type canceller[Tx any] struct {
	*env[Tx]
	canceller taskapi.Canceller[Tx]
}

func cancellerOf[Tx any](e *env[Tx]) *canceller[Tx] {
	return &canceller[Tx]{env: e, canceller: extension[taskapi.Canceller[Tx]](e.t, e.repo)}
}

// cancel cancels sequences of topic and fails the test on error.
func (c *canceller[Tx]) cancel(topic, reason string, sequences ...int64) []taskapi.Cancellation {
	c.t.Helper()
	got, err := c.canceller.Cancel(c.ctx, c.db, topic, reason, sequences...)
	c.must(err, "Cancel")
	return got
}

// cancelErr cancels and returns only the error.
func (c *canceller[Tx]) cancelErr(topic, reason string, sequences ...int64) error {
	_, err := c.canceller.Cancel(c.ctx, c.db, topic, reason, sequences...)
	return err
}

// must fails the test when err is not nil.
func (c *canceller[Tx]) must(err error, what string) {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// wantCancelled fails t unless got are tasks, in any order, each with
// owner, and cancelled from Active when owner is given, else from Ready.
func wantCancelled(t *testing.T, got []taskapi.Cancellation, tasks []taskapi.Task, owner string) {
	t.Helper()
	from := taskapi.Ready
	if owner != "" {
		from = taskapi.Active
	}
	wantCancelledFrom(t, got, tasks, from, owner)
}

// wantCancelledFrom fails t unless got are tasks, in any order, each
// cancelled from the state from, with owner.
func wantCancelledFrom(t *testing.T, got []taskapi.Cancellation, tasks []taskapi.Task, from taskapi.State, owner string) {
	t.Helper()
	var seqs []int64
	for _, c := range got {
		seqs = append(seqs, c.Task.Sequence)
		if c.Owner != owner || c.From != from {
			t.Errorf("cancellation of task %d names owner %q, from %v; want %q, from %v", c.Task.Sequence, c.Owner, c.From, owner, from)
		}
		if i := slices.IndexFunc(tasks, func(task taskapi.Task) bool { return task.Sequence == c.Task.Sequence }); i >= 0 && tasks[i] != c.Task {
			t.Errorf("cancellation returned %+v, want %+v", c.Task, tasks[i])
		}
	}
	slices.Sort(seqs)
	wantSeqs(t, "cancelled tasks", seqs, sequences(tasks))
}

// cancelRace runs pollers of two owners that complete what they poll while
// an operator cancels every third task, Ready or Active, and checks that
// each task ended with exactly one of the two: a completion that committed
// or a cancellation that returned it, as the stored states say. The
// operator walks from the last task back, towards the pollers, which walk
// from the first: where the database serializes every write (SQLite, whose
// writers take turns), an operator walking behind the pollers keeps their
// pace, one cancellation to their three tasks a round, and would only ever
// find the tasks they had completed. The pollers begin once the operator's
// first cancellation returned: on a busy machine they completed every task
// before the operator's first call.
func (c *canceller[Tx]) cancelRace(t *testing.T) {
	n := raceTasks(c.b, 240)
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", i%17)}
	}
	pushed := c.push("t", taskapi.Append, creations...)
	var (
		mu        sync.Mutex
		completed = map[int64]bool{}
		cancelled = map[int64]bool{}
		wg        sync.WaitGroup
		stop      = make(chan struct{})
		halt      = sync.OnceFunc(func() { close(stop) })
		begun     = make(chan struct{})
		begin     = sync.OnceFunc(func() { close(begun) })
	)
	defer func() { // the pollers return, should the operator fail first
		halt()
		begin()
		wg.Wait()
	}()
	operator := extension[taskapi.Canceller[Tx]](t, c.owner("operator"))
	for _, name := range []string{Owner, "owner-b"} {
		repo := c.repo
		if name != Owner {
			repo = c.owner(name)
		}
		wg.Go(func() {
			<-begun
			for {
				select {
				case <-stop:
					return
				default:
				}
				tasks, err := repo.Poll(c.ctx, c.db, "t", 3)
				if err != nil {
					if errors.Is(err, taskapi.ErrConflict) {
						continue
					}
					t.Errorf("Poll: %v", err)
					return
				}
				for _, done := range completeWhatIsLeft(t, c.ctx, repo, c.db, tasks) {
					mu.Lock()
					completed[done] = true
					mu.Unlock()
				}
			}
		})
	}
	for i := n - 1; i >= 0; i -= 3 {
		got, err := operator.Cancel(c.ctx, c.db, "t", "", pushed[i].Sequence)
		if errors.Is(err, taskapi.ErrConflict) {
			i += 3 // try the same task again
			continue
		}
		c.must(err, "Cancel")
		mu.Lock()
		for _, x := range got {
			cancelled[x.Task.Sequence] = true
		}
		mu.Unlock()
		begin()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		states := c.states("t")
		left := 0
		for _, s := range states {
			if s == taskapi.Ready || s == taskapi.Active {
				left++
			}
		}
		if left == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	halt()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	states := c.states("t")
	for _, task := range pushed {
		s, done, gone := states[task.Sequence], completed[task.Sequence], cancelled[task.Sequence]
		switch {
		case done && gone:
			t.Errorf("task %d was both completed and cancelled", task.Sequence)
		case done && s != taskapi.Succeeded, gone && s != taskapi.Cancelled, !done && !gone:
			t.Errorf("task %d: completed %v, cancelled %v, stored %v", task.Sequence, done, gone, s)
		}
	}
	if len(cancelled) == 0 || len(completed) == 0 {
		t.Errorf("%d completed and %d cancelled: the race did not mix them", len(completed), len(cancelled))
	}
}

// completeWhatIsLeft completes tasks with Success; tasks that a Complete
// refuses as not Active (cancelled meanwhile) are left out, and the rest
// completed again. It returns the sequences whose completion committed.
func completeWhatIsLeft[Tx any](t *testing.T, ctx context.Context, repo taskapi.Repository[Tx], db Tx, tasks []taskapi.Task) []int64 {
	for len(tasks) > 0 {
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
		}
		err := repo.Complete(ctx, db, "t", completions...)
		var se *taskapi.StateError
		switch {
		case err == nil:
			return sequences(tasks)
		case errors.Is(err, taskapi.ErrConflict):
			continue
		case errors.As(err, &se):
			tasks = slices.DeleteFunc(tasks, func(task taskapi.Task) bool { return slices.Contains(se.Sequences, task.Sequence) })
		default:
			t.Errorf("Complete: %v", err)
			return nil
		}
	}
	return nil
}
