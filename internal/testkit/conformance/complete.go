package conformance

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testComplete checks Complete: the state, output, owner, descent and
// completion time each result leaves, several decisions in one call, merged
// duplicates, and every way a completion is refused with ErrNotActive or
// ErrInvalidArgument without changing anything.
func testComplete[Tx any](t *testing.T, b Backend[Tx]) {
	// refused polls tasks a, b and c in "t" (leaving d Ready) and a in "u",
	// lets call complete some of them and checks that it fails with target
	// and that nothing in "t" or "u" changed.
	type refusal func(p *ppcEnv[Tx], tasks []taskapi.Task) error
	refused := func(target error, call refusal) func(t *testing.T) {
		return func(t *testing.T) {
			p := ppcSetup(t, b, "t", "u")
			tasks := p.pushIDs("t", "a", "b", "c", "d")
			ppcWantTasks(t, "Poll", p.poll("t", 3), tasks[:3])
			inU := p.pushIDs("u", "a")
			ppcWantTasks(t, "Poll(u)", p.poll("u", 1), inU)
			before := p.snapshot("t", "u")
			wantErr(t, call(p, tasks), target)
			p.wantUnchanged(before)
			// The valid completions still go through on their own.
			p.complete("t", taskapi.Success, tasks[:3]...)
			p.complete("u", taskapi.Success, inU...)
		}
	}

	cases(t, map[string]func(t *testing.T){
		"EachResultSetsItsState": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "failure", "suspension", "filter", "success")
			ppcWantTasks(t, "Poll", p.poll("t", 4), tasks)
			results := []taskapi.Result{taskapi.Failure, taskapi.Suspension, taskapi.Filter, taskapi.Success}
			completions := make([]taskapi.Completion, len(tasks))
			for i, task := range tasks {
				completions[i] = ppcDone(task, results[i], "out-"+task.Identifier)
			}
			if err := p.repo.Complete(p.ctx, p.db, "t", completions...); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := []taskapi.State{taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded}
			for i, task := range tasks {
				info := p.info("t", task.Sequence)
				if info.State != want[i] {
					t.Errorf("task completed with %v is %v, want %v", results[i], info.State, want[i])
				}
				if info.Output != "out-"+task.Identifier {
					t.Errorf("task completed with %v has output %q, want %q", results[i], info.Output, "out-"+task.Identifier)
				}
				if info.Owner != Owner || info.Descent != taskapi.Ready || info.Task != task {
					t.Errorf("completed task %s, want owner %q, descent READY and the task %v unchanged",
						ppcFormat(info), Owner, task)
				}
				ppcWantTime(t, "Completed", info.Completed)
				if info.Completed.Before(info.Created) {
					t.Errorf("task %d completed at %v, before it was created at %v", task.Sequence, info.Completed, info.Created)
				}
			}
		},
		"EmptyOutputIsAbsent": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b")
			p.poll("t", 2)
			if err := p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(tasks[0], taskapi.Success, ""), ppcDone(tasks[1], taskapi.Failure, "")); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			for _, task := range tasks {
				if info := p.info("t", task.Sequence); info.Output != "" || info.Completed.IsZero() {
					t.Errorf("task completed without output: %s, want empty output and a completion time", ppcFormat(info))
				}
			}
		},
		"OutputRoundTrip": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			task := p.pushIDs("t", "a")[0]
			p.poll("t", 1)
			output := "  {\"ok\": true}\nünïcödé € 😀\t "
			if err := p.repo.Complete(p.ctx, p.db, "t", ppcDone(task, taskapi.Filter, output)); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := p.info("t", task.Sequence).Output; got != output {
				t.Errorf("output = %q, want %q", got, output)
			}
		},
		"MixedDecisionsInOneCall": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c", "d", "e", "f", "g")
			ppcWantTasks(t, "Poll", p.poll("t", 7), tasks)
			// 1, 2, 3 consecutive; 5 and 7 apart; 4 and 6 left Active; given out of order.
			if err := p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(tasks[6], taskapi.Suspension, "o7"),
				ppcDone(tasks[0], taskapi.Success, "o1"),
				ppcDone(tasks[4], taskapi.Filter, ""),
				ppcDone(tasks[2], taskapi.Failure, "o3"),
				ppcDone(tasks[1], taskapi.Success, "o2"),
			); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := []struct {
				state  taskapi.State
				output string
			}{
				{taskapi.Succeeded, "o1"}, {taskapi.Succeeded, "o2"}, {taskapi.Failed, "o3"}, {taskapi.Active, ""},
				{taskapi.Filtered, ""}, {taskapi.Active, ""}, {taskapi.Suspended, "o7"},
			}
			for i, task := range tasks {
				info := p.info("t", task.Sequence)
				if info.State != want[i].state || info.Output != want[i].output {
					t.Errorf("task %s is %v with output %q, want %v with %q",
						task.Identifier, info.State, info.Output, want[i].state, want[i].output)
				}
				if completed := !info.Completed.IsZero(); completed != (want[i].state != taskapi.Active) {
					t.Errorf("task %s (%v) has completion time %v", task.Identifier, info.State, info.Completed)
				}
			}
		},
		"DuplicatesMergeMoreSevereWins": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c", "d")
			p.poll("t", 4)
			a, bb, c, d := tasks[0], tasks[1], tasks[2], tasks[3]
			if err := p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(a, taskapi.Success, "a-success"),
				ppcDone(bb, taskapi.Suspension, "b-suspension"),
				ppcDone(c, taskapi.Filter, "c-first"),
				ppcDone(d, taskapi.Failure, "d-failure"),
				ppcDone(a, taskapi.Failure, "a-failure"),
				ppcDone(bb, taskapi.Filter, "b-filter"),
				ppcDone(c, taskapi.Filter, "c-second"),
				ppcDone(bb, taskapi.Success, "b-success"),
				ppcDone(d, taskapi.Suspension, "d-suspension"),
			); err != nil {
				t.Fatalf("Complete with duplicates: %v", err)
			}
			for _, w := range []struct {
				task   taskapi.Task
				state  taskapi.State
				output string
			}{
				{a, taskapi.Failed, "a-failure"},
				{bb, taskapi.Suspended, "b-suspension"},
				{c, taskapi.Filtered, "c-second"}, // a tie: the later output wins
				{d, taskapi.Failed, "d-failure"},
			} {
				if info := p.info("t", w.task.Sequence); info.State != w.state || info.Output != w.output {
					t.Errorf("task %s is %v with output %q, want %v with %q",
						w.task.Identifier, info.State, info.Output, w.state, w.output)
				}
			}
		},
		"NoCompletionsIsNoOp": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			p.pushIDs("t", "a", "b")
			p.poll("t", 1)
			before := p.snapshot("t")
			if err := p.repo.Complete(p.ctx, p.db, "t"); err != nil {
				t.Errorf("Complete(t) without completions: %v", err)
			}
			if err := p.repo.Complete(p.ctx, p.db, "t", []taskapi.Completion{}...); err != nil {
				t.Errorf("Complete(t, empty slice): %v", err)
			}
			if err := p.repo.Complete(p.ctx, p.db, "unknown"); err != nil {
				t.Errorf("Complete(unknown) without completions: %v", err)
			}
			wantErr(t, p.repo.Complete(p.ctx, p.db, ""), taskapi.ErrInvalidArgument)
			p.wantUnchanged(before)
		},
		"InvalidResultIsRejected": refused(taskapi.ErrInvalidArgument, func(p *ppcEnv[Tx], tasks []taskapi.Task) error {
			for _, result := range []taskapi.Result{-1, 4, 100} {
				err := p.repo.Complete(p.ctx, p.db, "t",
					ppcDone(tasks[0], taskapi.Success, "x"), ppcDone(tasks[1], result, "y"))
				if err == nil {
					return nil
				}
				wantErr(p.t, err, taskapi.ErrInvalidArgument)
			}
			return p.repo.Complete(p.ctx, p.db, "t", ppcDone(tasks[2], taskapi.Result(7), ""))
		}),
		"ReadyTaskIsNotActive": refused(taskapi.ErrNotActive, func(p *ppcEnv[Tx], tasks []taskapi.Task) error {
			return p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(tasks[0], taskapi.Success, "x"), ppcDone(tasks[3], taskapi.Success, "ready"))
		}),
		"TaskOfAnotherTopicIsNotActive": refused(taskapi.ErrNotActive, func(p *ppcEnv[Tx], tasks []taskapi.Task) error {
			inU := p.all("u")[0].Task // Active, owned by Owner, but in topic u
			return p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(tasks[1], taskapi.Success, "x"), ppcDone(inU, taskapi.Success, "other topic"))
		}),
		"MissingSequenceIsNotActive": refused(taskapi.ErrNotActive, func(p *ppcEnv[Tx], tasks []taskapi.Task) error {
			ghost := taskapi.Task{Sequence: 1 << 40, Identifier: "a"}
			return p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(tasks[0], taskapi.Success, "x"), ppcDone(ghost, taskapi.Success, "missing"),
				ppcDone(tasks[2], taskapi.Failure, "y"))
		}),
		"UnknownTopicIsNotActive": refused(taskapi.ErrNotActive, func(p *ppcEnv[Tx], tasks []taskapi.Task) error {
			return p.repo.Complete(p.ctx, p.db, "unknown", ppcDone(tasks[0], taskapi.Success, "x"))
		}),
		"TaskOfAnotherOwnerIsNotActive": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b")
			theirs, err := p.other().Poll(p.ctx, p.db, "t", 1)
			if err != nil || len(theirs) != 1 || theirs[0] != tasks[0] {
				t.Fatalf("Poll by %s = %v, %v, want [%v]", ppcOther, theirs, err, tasks[0])
			}
			mine := p.poll("t", 1)
			ppcWantTasks(t, "Poll", mine, tasks[1:])
			before := p.snapshot("t")
			err = p.repo.Complete(p.ctx, p.db, "t",
				ppcDone(mine[0], taskapi.Success, "mine"), ppcDone(theirs[0], taskapi.Success, "theirs"))
			wantErr(t, err, taskapi.ErrNotActive)
			p.wantUnchanged(before)
			if err := p.repo.Complete(p.ctx, p.db, "t", ppcDone(theirs[0], taskapi.Success, "theirs")); !errors.Is(err, taskapi.ErrNotActive) {
				t.Errorf("Complete of %s's task alone: error = %v, want %v", ppcOther, err, taskapi.ErrNotActive)
			}
			p.wantUnchanged(before)
			if err := p.other().Complete(p.ctx, p.db, "t", ppcDone(theirs[0], taskapi.Filter, "by owner")); err != nil {
				t.Fatalf("Complete by the owner %s: %v", ppcOther, err)
			}
			if info := p.info("t", theirs[0].Sequence); info.State != taskapi.Filtered || info.Owner != ppcOther || info.Output != "by owner" {
				t.Errorf("task completed by its owner: %s", ppcFormat(info))
			}
		},
		"CompletedTaskIsNotActive": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b")
			p.poll("t", 2)
			if err := p.repo.Complete(p.ctx, p.db, "t", ppcDone(tasks[0], taskapi.Success, "first")); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			before := p.snapshot("t")
			for _, result := range []taskapi.Result{taskapi.Failure, taskapi.Success} {
				err := p.repo.Complete(p.ctx, p.db, "t",
					ppcDone(tasks[1], taskapi.Success, "x"), ppcDone(tasks[0], result, "second"))
				wantErr(t, err, taskapi.ErrNotActive)
			}
			p.wantUnchanged(before)
			if got := p.poll("t", 10); len(got) != 0 {
				t.Errorf("Poll after completion = %v, want nothing: a completed task is not polled again", got)
			}
		},
		"ExpiredTaskIsNotActive": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			task := p.pushIDs("t", "a")[0]
			p.takeNewest(p.other(), "t", task)
			p.expireOther()
			before := p.snapshot("t")
			wantErr(t, p.other().Complete(p.ctx, p.db, "t", ppcDone(task, taskapi.Success, "late")), taskapi.ErrNotActive)
			wantErr(t, p.repo.Complete(p.ctx, p.db, "t", ppcDone(task, taskapi.Success, "stranger")), taskapi.ErrNotActive)
			p.wantUnchanged(before)
			if info := p.info("t", task.Sequence); info.State != taskapi.Expired || info.Owner != ppcOther {
				t.Errorf("expired task is %v owned by %q, want EXPIRED owned by %q", info.State, info.Owner, ppcOther)
			}
		},
		"ACompletionThatWaitedForAConcurrentChangeWritesNothing": func(t *testing.T) {
			for _, inTx := range []bool{false, true} {
				if inTx && b.SingleWriter {
					continue // a caller's transaction begins only once the operator's has ended
				}
				p := ppcSetup(t, b, "t")
				tasks := p.pushIDs("t", "a", "b", "c")
				ppcWantTasks(t, "Poll", p.poll("t", 3), tasks)
				completeWhileCancelling(t, p, tasks, tasks[1], inTx)
			}
		},
		"MatchedBySequence": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			task := p.pushIDs("t", "a")[0]
			p.poll("t", 1)
			given := taskapi.Task{Sequence: task.Sequence, Identifier: "something-else", Input: "another input"}
			if err := p.repo.Complete(p.ctx, p.db, "t", ppcDone(given, taskapi.Success, "")); err != nil {
				t.Fatalf("Complete by sequence with another identifier and input: %v", err)
			}
			if info := p.info("t", task.Sequence); info.Task != task || info.State != taskapi.Succeeded {
				t.Errorf("task is %s, want %v Succeeded with its stored identifier and input", ppcFormat(info), task)
			}
		},
		"CompletionReleasesIdentifier": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a")
			ppcWantTasks(t, "Poll(Singular)", p.poll("t", 10, taskapi.SingularByIdentifier), tasks[:1])
			p.complete("t", taskapi.Filter, tasks[0])
			ppcWantTasks(t, "Poll(Singular) after completion", p.poll("t", 10, taskapi.SingularByIdentifier), tasks[1:])
		},
		"InCallersTransaction": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			task := p.pushIDs("t", "a")[0]
			p.poll("t", 1)
			for _, commit := range []bool{false, true} {
				tx, end, err := b.Begin(p.ctx, p.db)
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				if err := p.repo.Complete(p.ctx, tx, "t", ppcDone(task, taskapi.Success, "done")); err != nil {
					_ = end(false)
					t.Fatalf("Complete in a transaction: %v", err)
				}
				if err := end(commit); err != nil {
					t.Fatalf("end(%v): %v", commit, err)
				}
				info := p.info("t", task.Sequence)
				switch {
				case !commit && (info.State != taskapi.Active || info.Output != "" || !info.Completed.IsZero()):
					t.Errorf("after rollback the task is %s, want it still Active", ppcFormat(info))
				case commit && (info.State != taskapi.Succeeded || info.Output != "done"):
					t.Errorf("after commit the task is %s, want it Succeeded with output done", ppcFormat(info))
				}
			}
		},
	})
}

// completeWhileCancelling completes tasks, all Active and p.repo's, on the
// pool or, inTx, in a caller's transaction, while an operator's
// transaction that cancels changed holds it: the completion waits for it,
// and once the cancellation commits it fails whole with ErrNotActive
// naming changed, as it would had it come after it, and a caller's
// transaction stays usable. It may not write the tasks that stayed
// Active, as a statement that wrote what still matched would.
func completeWhileCancelling[Tx any](t *testing.T, p *ppcEnv[Tx], tasks []taskapi.Task, changed taskapi.Task, inTx bool) {
	t.Helper()
	begin := func() (Tx, func(bool) error) {
		t.Helper()
		tx, end, err := p.b.Begin(p.ctx, p.db)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		return tx, end
	}
	operator := extension[taskapi.Canceller[Tx]](t, p.other()) // registered before the transaction
	tx, end := begin()
	if _, err := operator.Cancel(p.ctx, tx, "t", "meanwhile", changed.Sequence); err != nil {
		_ = end(false)
		t.Fatalf("Cancel in a transaction: %v", err)
	}
	db, endCaller := p.db, func(bool) error { return nil }
	if inTx {
		db, endCaller = begin()
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = ppcDone(task, taskapi.Success, "late")
	}
	result := make(chan error, 1)
	go func() { result <- p.repo.Complete(p.ctx, db, "t", completions...) }()
	// Time for the completion to meet the held task; should it come
	// later, it finds the task cancelled, and the outcome is the same.
	time.Sleep(200 * time.Millisecond)
	if err := end(true); err != nil {
		t.Fatalf("commit of the cancellation: %v", err)
	}
	var err error
	select {
	case err = <-result:
	case <-time.After(time.Minute):
		t.Fatal("Complete still waits a minute after the transaction it waited for committed")
	}
	var se *taskapi.StateError
	if !errors.Is(err, taskapi.ErrNotActive) || !errors.As(err, &se) || !slices.Equal(se.Sequences, []int64{changed.Sequence}) {
		_ = endCaller(false)
		t.Fatalf("Complete (in a transaction: %v) after a concurrent cancellation: %v, want ErrNotActive naming task %d", inTx, err, changed.Sequence)
	}
	rest := slices.DeleteFunc(slices.Clone(completions), func(c taskapi.Completion) bool { return c.Task == changed })
	if err := p.repo.Complete(p.ctx, db, "t", rest...); err != nil { // in the caller's transaction, which goes on
		_ = endCaller(false)
		t.Fatalf("Complete of the tasks that stayed Active: %v", err)
	}
	if err := endCaller(true); err != nil {
		t.Fatalf("commit of the caller's transaction: %v", err)
	}
	for _, task := range tasks {
		info := p.info("t", task.Sequence)
		switch {
		case task == changed && info.State != taskapi.Cancelled:
			t.Errorf("the cancelled task is %s, want CANCELLED", ppcFormat(info))
		case task != changed && (info.State != taskapi.Succeeded || info.Output != "late"):
			t.Errorf("task %d is %s, want it completed by the second call alone", task.Sequence, ppcFormat(info))
		}
	}
}
