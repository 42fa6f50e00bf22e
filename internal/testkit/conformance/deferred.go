package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testDeferred checks NotBefore (a task is polled no earlier than its time
// on the database clock), Defer, and the count of revivals. Times that must
// not be due lie an hour ahead and times that must be due an hour back, far
// beyond any clock skew between the test and the database.
func testDeferred[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["APollTakesOnlyDueTasksInSequenceOrder"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		later, earlier := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
		tasks := p.push("t", taskapi.Append,
			taskapi.Creation{Identifier: "later", NotBefore: later},
			taskapi.Creation{Identifier: "now"},
			taskapi.Creation{Identifier: "earlier", NotBefore: earlier},
			taskapi.Creation{Identifier: "now-too"})
		ppcWantTasks(t, "Poll(t, 10)", p.poll("t", 10), []taskapi.Task{tasks[1], tasks[2], tasks[3]})
		p.wantState("t", tasks[0].Sequence, taskapi.Ready)
		ppcWantTasks(t, "Poll(t, 10) again", p.poll("t", 10), nil)
		ppcWantTasks(t, "Poll(t, 10, LIFO)", p.poll("t", 10, taskapi.LIFO), nil)
		if got := p.info("t", tasks[0].Sequence).NotBefore; !got.Equal(deferredTime(later)) || got.Location() != time.UTC {
			t.Errorf("NotBefore of the deferred task = %v, want %v in UTC", got, deferredTime(later))
		}
		if got := p.info("t", tasks[2].Sequence).NotBefore; !got.Equal(deferredTime(earlier)) {
			t.Errorf("NotBefore of the task due an hour ago = %v, want it stored as given, %v", got, deferredTime(earlier))
		}
		if got := p.info("t", tasks[1].Sequence).NotBefore; !got.IsZero() {
			t.Errorf("NotBefore of a task pushed without one = %v, want zero", got)
		}
	}

	all["ATaskIsPolledOnceItsTimeHasCome"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		// The backends of the suite run on this machine's clock: a second
		// before the task's time, it is not due.
		at := time.Now().Add(2 * time.Second)
		task := p.push("t", taskapi.Append, taskapi.Creation{Identifier: "x", NotBefore: at})[0]
		if got := p.poll("t", 10); len(got) != 0 && time.Now().Before(at.Add(-time.Second)) {
			t.Fatalf("Poll before the task's time = %v, want nothing", got)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := p.poll("t", 10)
			if len(got) == 1 && got[0] == task {
				return // no background process needed: a poll after its time takes it
			}
			if len(got) != 0 || time.Now().After(deadline) {
				t.Fatalf("Poll = %v, want %v once due (deadline %v)", got, task, deadline)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	all["ADeferredTaskKeepsItsPlaceInItsIdentifiersOrder"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		tasks := p.push("t", taskapi.Append,
			taskapi.Creation{Identifier: "x", NotBefore: time.Now().Add(time.Hour)},
			taskapi.Creation{Identifier: "x"},
			taskapi.Creation{Identifier: "y"})
		ppcWantTasks(t, "Poll(t, 10, SingularByIdentifier)", p.poll("t", 10, taskapi.SingularByIdentifier), tasks[2:])
		for _, condition := range []taskapi.Condition{taskapi.SingularByIdentifier,
			taskapi.SingularByIdentifierSuspendOnFailure, taskapi.SingularByIdentifierSuspendUntilSuccess} {
			ppcWantTasks(t, "Poll(t, 10, "+condition.String()+") of the blocked identifier", p.poll("t", 10, condition), nil)
		}
		p.wantState("t", tasks[1].Sequence, taskapi.Ready)
		ppcWantTasks(t, "Poll(t, 10) unconditional", p.poll("t", 10), []taskapi.Task{tasks[1]})
	}

	all["DeferSetsAndClearsTheTime"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		tasks := p.pushIDs("t", "a", "b", "c")
		later := time.Now().Add(time.Hour)
		p.deferTasks("t", later, tasks[0], tasks[1], tasks[1])
		for _, task := range tasks[:2] {
			if got := p.info("t", task.Sequence); !got.NotBefore.Equal(deferredTime(later)) || got.State != taskapi.Ready {
				t.Errorf("task %d after Defer: %s, want Ready, not before %v", task.Sequence, ppcFormat(got), deferredTime(later))
			}
		}
		ppcWantTasks(t, "Poll after Defer", p.poll("t", 10), []taskapi.Task{tasks[2]})
		p.deferTasks("t", time.Time{}, tasks[0])
		if got := p.info("t", tasks[0].Sequence).NotBefore; !got.IsZero() {
			t.Errorf("NotBefore after Defer to the zero time = %v, want zero", got)
		}
		p.deferTasks("t", time.Now().Add(-time.Hour), tasks[1])
		ppcWantTasks(t, "Poll after Defer to now and to the past", p.poll("t", 10), tasks[:2])
		p.deferTasks("t", later) // no tasks: nothing to do, whatever the topic
		if err := p.repo.Defer(p.ctx, p.db, "unknown", later); err != nil {
			t.Errorf("Defer of no tasks in an unknown topic = %v, want nil", err)
		}
	}

	all["DeferOfATaskThatIsNotReadyChangesNothing"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t", "u")
		tasks := p.pushIDs("t", "a", "b", "c")
		p.poll("t", 1) // a is Active
		other := p.pushIDs("u", "d")[0]
		p.complete("t", taskapi.Success, p.poll("t", 1)...) // b is Succeeded
		before := p.snapshot("t", "u")
		later := time.Now().Add(time.Hour)
		for name, call := range map[string][]taskapi.Task{
			"an Active task":        {tasks[2], tasks[0]},
			"a Succeeded task":      {tasks[2], tasks[1]},
			"a task of a topic":     {tasks[2], other},
			"a task that never was": {tasks[2], {Sequence: other.Sequence + 1000, Identifier: "x"}},
		} {
			err := p.repo.Defer(p.ctx, p.db, "t", later, call...)
			var stateErr *taskapi.StateError
			if !errors.Is(err, taskapi.ErrStateMismatch) || !errors.As(err, &stateErr) || len(stateErr.Sequences) != 1 || stateErr.Sequences[0] != call[1].Sequence {
				t.Errorf("Defer of %s = %v, want ErrStateMismatch naming task %d", name, err, call[1].Sequence)
			}
		}
		wantErr(t, p.repo.Defer(p.ctx, p.db, "unknown", later, tasks[2]), taskapi.ErrStateMismatch)
		wantErr(t, p.repo.Defer(p.ctx, p.db, "", later, tasks[2]), taskapi.ErrInvalidArgument)
		wantErr(t, p.repo.Defer(p.ctx, p.db, "t", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), tasks[2]), taskapi.ErrInvalidArgument)
		_, err := p.repo.Push(p.ctx, p.db, "t", taskapi.Append,
			taskapi.Creation{Identifier: "fine"}, taskapi.Creation{Identifier: "far", NotBefore: time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC)})
		wantErr(t, err, taskapi.ErrInvalidArgument)
		p.wantUnchanged(before)
	}

	all["TimesAreKeptToTheMicrosecondInUTC"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		at := time.Date(2031, 2, 3, 4, 5, 6, 123456789, time.FixedZone("east", 5*3600+1800))
		tasks := p.push("t", taskapi.Append, taskapi.Creation{Identifier: "a", NotBefore: at}, taskapi.Creation{Identifier: "b"})
		p.deferTasks("t", at.Add(time.Second), tasks[1])
		for i, want := range []time.Time{deferredTime(at), deferredTime(at.Add(time.Second))} {
			if got := p.info("t", tasks[i].Sequence).NotBefore; !got.Equal(want) || got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
				t.Errorf("NotBefore of task %d = %v, want %v", tasks[i].Sequence, got, want)
			}
		}
	}

	all["JoinKeepsTheTimeAndTheReleasedTaskWaitsForIt"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		later := time.Now().Add(time.Hour)
		task := p.push("t", taskapi.Append, taskapi.Creation{Identifier: "a", Suspended: true, NotBefore: later})[0]
		if released, err := p.repo.Join(p.ctx, p.db, "t", taskapi.Singular, []string{"a"}); err != nil || len(released) != 1 {
			t.Fatalf("Join = %v, %v; want the group released", released, err)
		}
		if got := p.info("t", task.Sequence); got.State != taskapi.Ready || !got.NotBefore.Equal(deferredTime(later)) {
			t.Errorf("after Join: %s, want Ready, not before %v", ppcFormat(got), deferredTime(later))
		}
		ppcWantTasks(t, "Poll after Join", p.poll("t", 10), nil)
	}

	all["RevivalsCountOnTheRowAndCarryToNewTasks"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		task := p.push("t", taskapi.Append, taskapi.Creation{Identifier: "a", NotBefore: time.Now().Add(-time.Hour)})[0]
		if got := p.info("t", task.Sequence).Revivals; got != 0 {
			t.Errorf("Revivals of a new task = %d, want 0", got)
		}
		fail := func() { p.complete("t", taskapi.Failure, p.poll("t", 1)...) }
		revive := func(how taskapi.Revivification) taskapi.Revival {
			revivals, err := p.repo.ReviveTasks(p.ctx, p.db, "t", how, task)
			if err != nil || len(revivals) != 1 {
				t.Fatalf("ReviveTasks(%v) = %v, %v", how, revivals, err)
			}
			return revivals[0]
		}
		fail()
		revive(taskapi.ReviveReset)
		if got := p.info("t", task.Sequence); got.Revivals != 1 || !got.NotBefore.IsZero() {
			t.Errorf("after ReviveReset: %s, want 1 revival and no NotBefore", ppcFormat(got))
		}
		fail()
		next := revive(taskapi.ReviveAppend).Current
		if got := p.info("t", task.Sequence).Revivals; got != 1 {
			t.Errorf("Revivals of the Recreated task = %d, want its own 1", got)
		}
		if got := p.info("t", next.Sequence); got.Revivals != 2 || !got.NotBefore.IsZero() {
			t.Errorf("the task revived from it: %s, want 2 revivals and no NotBefore", ppcFormat(got))
		}
		task = next
		fail()
		n, err := p.repo.Revive(p.ctx, p.db, "t", taskapi.ReviveReplace, taskapi.Failed, taskapi.Unbounded, 10)
		if err != nil || len(n) != 1 {
			t.Fatalf("Revive(ReviveReplace) = %v, %v", n, err)
		}
		if got := p.info("t", n[0].Current.Sequence).Revivals; got != 3 {
			t.Errorf("Revivals after a third revival by span = %d, want 3", got)
		}
	}

	all["ManyDueAndDeferredTasksArePolledExactlyOnce"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		var creations []taskapi.Creation
		for i := range 60 {
			c := taskapi.Creation{Identifier: string(rune('a' + i%26)), Input: "x"}
			switch i % 3 {
			case 1:
				c.NotBefore = time.Now().Add(-time.Duration(i) * time.Minute) // due, in no particular order
			case 2:
				c.NotBefore = time.Now().Add(time.Hour) // not due
			}
			creations = append(creations, c)
		}
		tasks := p.push("t", taskapi.Append, creations...)
		seen := map[int64]bool{}
		for range 100 {
			got := p.poll("t", 7)
			if len(got) == 0 {
				break
			}
			for i, task := range got {
				if seen[task.Sequence] || (i > 0 && got[i-1].Sequence >= task.Sequence) {
					t.Fatalf("Poll = %v: a task twice or out of sequence order", sequences(got))
				}
				seen[task.Sequence] = true
			}
		}
		for i, task := range tasks {
			if due := i%3 != 2; seen[task.Sequence] != due {
				t.Errorf("task %d (due %v) polled %v", task.Sequence, due, seen[task.Sequence])
			}
		}
	}

	cases(t, all)
}

// deferredTime is t as a repository stores and reports it.
func deferredTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// deferTasks defers tasks of topic to until and fails the test on error.
func (p *ppcEnv[Tx]) deferTasks(topic string, until time.Time, tasks ...taskapi.Task) {
	p.t.Helper()
	if err := p.repo.Defer(p.ctx, p.db, topic, until, tasks...); err != nil {
		p.t.Fatalf("Defer(%q, %v, %v): %v", topic, until, tasks, err)
	}
}
