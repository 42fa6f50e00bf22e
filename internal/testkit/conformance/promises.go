package conformance

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testPromises checks promises that a review of the repository found broken
// once: a restarted owner strands nothing, a failed call names the tasks at
// fault, times record the moment of the call, a released task forgets its
// suspension, and errors never repeat huge arguments.
func testPromises[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["AnOwnerRegisteredAgainTakesOverWhatItsEarlierLifeHeld"] = func(t *testing.T) {
		e := setup(t, b, "t")
		first := e.owner("worker")
		e.pushIDs("t", "a", "b", "c")
		held, err := first.Poll(e.ctx, e.db, "t", 2)
		if err != nil || len(held) != 2 {
			t.Fatalf("Poll by the first life = %v, %v", held, err)
		}
		// The same process started again: a new Repository value, same name.
		second, err := b.New("worker")
		if err != nil {
			t.Fatal(err)
		}
		if created, err := second.Register(e.ctx, e.db); err != nil || created {
			t.Fatalf("Register of the second life = %v, %v; want false, nil", created, err)
		}
		for _, task := range held {
			e.wantState("t", task.Sequence, taskapi.Expired)
		}
		revived, err := e.repo.ReviveTasks(e.ctx, e.db, "t", taskapi.ReviveReset, held...)
		if err != nil || len(revived) != 2 {
			t.Fatalf("ReviveTasks of what the first life held = %v, %v", revived, err)
		}
		// The second life works; registering it again takes nothing from it.
		mine, err := second.Poll(e.ctx, e.db, "t", 1)
		if err != nil || len(mine) != 1 {
			t.Fatalf("Poll by the second life = %v, %v", mine, err)
		}
		if _, err := second.Register(e.ctx, e.db); err != nil {
			t.Fatal(err)
		}
		e.wantState("t", mine[0].Sequence, taskapi.Active)
		if err := second.Complete(e.ctx, e.db, "t", taskapi.Completion{Task: mine[0]}); err != nil {
			t.Errorf("Complete by the second life after its Register: %v", err)
		}
	}

	all["AFailedCompleteNamesTheTasksAtFault"] = func(t *testing.T) {
		e := setup(t, b, "t")
		e.pushIDs("t", "a", "b", "c")
		polled := e.poll("t", 3)
		e.complete("t", taskapi.Success, polled[0], polled[2])
		before := e.states("t")
		err := e.repo.Complete(e.ctx, e.db, "t", decisions(taskapi.Failure, polled...)...)
		wantStateError(t, err, taskapi.ErrNotActive, "t", polled[0].Sequence, polled[2].Sequence)
		if after := e.states("t"); !maps.Equal(before, after) {
			t.Errorf("states after the failed Complete = %v, want %v", after, before)
		}
	}

	all["AFailedReviveOrReassignNamesTheTasksAtFault"] = func(t *testing.T) {
		e := setup(t, b, "t")
		tasks := e.pushIDs("t", "a", "b", "c")
		done := e.poll("t", 2)
		e.complete("t", taskapi.Failure, done...)
		missing := taskapi.Task{Sequence: tasks[2].Sequence + 1000}
		before := e.states("t")
		_, err := e.repo.ReviveTasks(e.ctx, e.db, "t", taskapi.ReviveAppend, done[0], tasks[2], done[1], missing)
		wantStateError(t, err, taskapi.ErrStateMismatch, "t", tasks[2].Sequence, missing.Sequence)
		err = e.repo.Reassign(e.ctx, e.db, "t",
			taskapi.Assignment{Task: done[1], Result: taskapi.Success}, taskapi.Assignment{Task: tasks[2], Result: taskapi.Success})
		wantStateError(t, err, taskapi.ErrStateMismatch, "t", tasks[2].Sequence)
		if after := e.states("t"); !maps.Equal(before, after) {
			t.Errorf("states after the failed calls = %v, want %v", after, before)
		}
	}

	all["TimesRecordTheMomentOfTheCallNotOfTheTransaction"] = func(t *testing.T) {
		e := setup(t, b, "t")
		early := e.push("t", taskapi.Append, taskapi.Creation{Identifier: "early", Suspended: true})[0]
		tx, end, err := b.Begin(e.ctx, e.db)
		if err != nil {
			t.Fatal(err)
		}
		// A producer's transaction that began before t pushes after it.
		if _, err := e.repo.Topics(e.ctx, tx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the transaction grows old
		at := time.Now()
		time.Sleep(5 * time.Millisecond)
		late, err := e.repo.Push(e.ctx, tx, "t", taskapi.Append, taskapi.Creation{Identifier: "late", Suspended: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := end(true); err != nil {
			t.Fatal(err)
		}
		if created := e.info("t", late[0].Sequence).Created; !created.After(at) {
			t.Errorf("a task pushed after %v in an older transaction was created at %v", at, created)
		}
		purged, err := taskapi.PurgeBefore(e.ctx, e.repo, e.db, "t", at)
		if err != nil || purged != 1 {
			t.Fatalf("PurgeBefore(%v) = %d, %v; want the early task only", at, purged, err)
		}
		if _, ok, _ := e.repo.Lookup(e.ctx, e.db, "t", early.Sequence); ok {
			t.Errorf("the task created before %v survived PurgeBefore", at)
		}
		if _, ok, _ := e.repo.Lookup(e.ctx, e.db, "t", late[0].Sequence); !ok {
			t.Errorf("PurgeBefore(%v) purged the task created after it", at)
		}
	}

	all["AReleasedTaskForgetsItsSuspension"] = func(t *testing.T) {
		e := setup(t, b, "t")
		task := e.pushIDs("t", "a")[0]
		e.poll("t", 1)
		err := e.repo.Complete(e.ctx, e.db, "t",
			taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Suspension, Output: "waiting for b"}})
		if err != nil {
			t.Fatal(err)
		}
		if released, err := e.repo.Join(e.ctx, e.db, "t", taskapi.Singular, []string{"a"}); err != nil || !slices.Equal(released, []string{"a"}) {
			t.Fatalf("Join = %v, %v", released, err)
		}
		info := e.info("t", task.Sequence)
		if info.State != taskapi.Ready || info.Owner != "" || info.Output != "" || !info.Completed.IsZero() {
			t.Errorf("released task = %+v, want Ready without owner, output or completion time", info)
		}
		if info.Descent != taskapi.Ready {
			t.Errorf("released task's descent = %v, want it unchanged (READY)", info.Descent)
		}
	}

	all["ErrorsNeverRepeatAHugeArgument"] = func(t *testing.T) {
		e := setup(t, b, "t")
		huge := strings.Repeat("x", 1<<20)
		for name, call := range map[string]func() error{
			"Push": func() error {
				_, err := e.repo.Push(e.ctx, e.db, huge, taskapi.Append, taskapi.Creation{Identifier: "a"})
				return err
			},
			"Poll":       func() error { _, err := e.repo.Poll(e.ctx, e.db, huge, 1); return err },
			"Initialize": func() error { _, err := e.repo.Initialize(e.ctx, e.db, huge); return err },
			"Page": func() error {
				_, err := e.repo.Page(e.ctx, e.db, huge, taskapi.Listing{}, taskapi.Inception, 1, taskapi.Forward)
				return err
			},
			"Push of a huge identifier": func() error {
				_, err := e.repo.Push(e.ctx, e.db, "t", taskapi.Append, taskapi.Creation{Identifier: huge})
				return err
			},
			"New": func() error { _, err := b.New(huge); return err },
		} {
			err := call()
			if !errors.Is(err, taskapi.ErrInvalidArgument) || len(err.Error()) > 300 {
				t.Errorf("%s with 1 MiB of text: a %d-byte error %.100q…, want a short ErrInvalidArgument", name, len(errText(err)), errText(err))
			}
		}
	}

	cases(t, all)
}

// wantStateError fails t unless err is a *taskapi.StateError of sentinel that
// names topic and the sequences, ascending.
func wantStateError(t *testing.T, err, sentinel error, topic string, sequences ...int64) {
	t.Helper()
	var se *taskapi.StateError
	if !errors.Is(err, sentinel) || !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *taskapi.StateError of %v", err, sentinel)
	}
	if se.Topic != topic || !slices.Equal(se.Sequences, sequences) {
		t.Errorf("StateError names topic %q and tasks %v, want %q and %v", se.Topic, se.Sequences, topic, sequences)
	}
}

// decisions completes every task with one result.
func decisions(result taskapi.Result, tasks ...taskapi.Task) []taskapi.Completion {
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: result}}
	}
	return completions
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
