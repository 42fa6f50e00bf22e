package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testPoll checks Poll: orders, sizes, the Active mark and owner, unknown
// topics and owners, every poll condition, with AwaitRevival and without,
// the isolation of topics, PollOne, and concurrent pollers that never share
// a task or an identifier.
func testPoll[Tx any](t *testing.T, b Backend[Tx]) {
	// conditionCase builds, in topic "t", one identifier per kind of other
	// task that may block it (plus "free" with none), pushes one Ready
	// candidate per identifier, polls with opts (a condition, and maybe
	// AwaitRevival) and checks that exactly the identifiers of want were
	// polled.
	conditionCase := func(opts []taskapi.PollOption, want ...string) func(t *testing.T) {
		return func(t *testing.T) {
			p := ppcSetup(t, b, "t", "u")
			p.inState("t", "active", taskapi.Active)
			p.inState("t", "expired", taskapi.Expired)
			p.inState("t", "failed", taskapi.Failed)
			p.inState("t", "suspended", taskapi.Suspended)
			p.suspendedTask("t", "pushed-suspended")
			p.inState("t", "filtered", taskapi.Filtered)
			p.inState("t", "succeeded", taskapi.Succeeded)
			// The same blockers in another topic must not matter.
			p.inState("u", "free", taskapi.Active)
			p.inState("u", "free", taskapi.Expired)
			p.inState("u", "free", taskapi.Failed)
			p.suspendedTask("u", "free")
			candidates := p.pushIDs("t", "active", "expired", "failed", "suspended", "pushed-suspended",
				"filtered", "succeeded", "free")
			var wanted []taskapi.Task
			for _, task := range candidates {
				if slices.Contains(want, task.Identifier) {
					wanted = append(wanted, task)
				}
			}
			got := p.poll("t", 100, opts...)
			ppcWantTasks(t, fmt.Sprintf("Poll(t, 100, %v) identifiers %v", opts, ppcIDs(got)), got, wanted)
			for _, task := range wanted {
				p.wantState("t", task.Sequence, taskapi.Active)
			}
			if again := p.poll("t", 100, opts...); len(again) != 0 {
				t.Errorf("second Poll(t, 100, %v) = %v, want nothing", opts, again)
			}
		}
	}

	cases(t, map[string]func(t *testing.T){
		"FIFOIsTheDefault": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "e", "d", "c", "b", "a")
			ppcWantTasks(t, "Poll(t, 3)", p.poll("t", 3), tasks[:3])
			ppcWantTasks(t, "Poll(t, 3, FIFO)", p.poll("t", 3, taskapi.FIFO), tasks[3:])
		},
		"LIFODescending": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c", "d", "e")
			ppcWantTasks(t, "Poll(t, 3, LIFO)", p.poll("t", 3, taskapi.LIFO),
				[]taskapi.Task{tasks[4], tasks[3], tasks[2]})
			ppcWantTasks(t, "Poll(t, 10, LIFO)", p.poll("t", 10, taskapi.LIFO),
				[]taskapi.Task{tasks[1], tasks[0]})
		},
		"ContradictoryOptionsAreRejected": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "b", "b")
			before := p.snapshot("t")
			for _, opts := range [][]taskapi.PollOption{
				{taskapi.LIFO, taskapi.FIFO}, {taskapi.FIFO, taskapi.LIFO},
				{taskapi.SingularByIdentifier, taskapi.Unconditional},
				{taskapi.SingularByIdentifierSuspendOnFailure, taskapi.SingularByIdentifierSuspendUntilSuccess},
				{taskapi.SingularByIdentifier, taskapi.AwaitRevival{}, taskapi.Unconditional},
			} {
				_, err := p.repo.Poll(p.ctx, p.db, "t", 10, opts...)
				if !errors.Is(err, taskapi.ErrInvalidArgument) {
					t.Errorf("Poll(t, 10, %v): error = %v, want %v", opts, err, taskapi.ErrInvalidArgument)
				}
			}
			p.wantUnchanged(before)
			// An option given twice alike says the same thing once.
			ppcWantTasks(t, "Poll(t, 1, LIFO, LIFO)", p.poll("t", 1, taskapi.LIFO, taskapi.LIFO), tasks[3:])
		},
		"InvalidOptionsAreRejected": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			p.pushIDs("t", "a")
			before := p.snapshot("t")
			for _, opts := range [][]taskapi.PollOption{
				{taskapi.Order(2)}, {taskapi.Order(-1)}, {taskapi.Condition(4)}, {taskapi.FIFO, taskapi.Condition(-1)},
				{taskapi.AwaitRevival{}, taskapi.Condition(4)},
			} {
				for _, size := range []int{1, 0} {
					_, err := p.repo.Poll(p.ctx, p.db, "t", size, opts...)
					if !errors.Is(err, taskapi.ErrInvalidArgument) {
						t.Errorf("Poll(t, %d, %v): error = %v, want %v", size, opts, err, taskapi.ErrInvalidArgument)
					}
				}
			}
			p.wantUnchanged(before)
		},
		"SizeLimitsTheBatch": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c", "d", "e", "f", "g")
			ppcWantTasks(t, "Poll(t, 2)", p.poll("t", 2), tasks[:2])
			ppcWantTasks(t, "Poll(t, 100)", p.poll("t", 100), tasks[2:])
			if got := p.poll("t", 1); len(got) != 0 {
				t.Errorf("Poll of an exhausted topic = %v, want nothing", got)
			}
		},
		"SizeBelowOneReturnsNothing": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			p.pushIDs("t", "a", "b")
			before := p.snapshot("t")
			for _, size := range []int{0, -1, -100} {
				got, err := p.repo.Poll(p.ctx, p.db, "t", size)
				ppcWantNone(t, fmt.Sprintf("Poll(t, %d)", size), got, err)
				got, err = p.repo.Poll(p.ctx, p.db, "t", size, taskapi.LIFO, taskapi.SingularByIdentifier)
				ppcWantNone(t, fmt.Sprintf("Poll(t, %d, LIFO, SingularByIdentifier)", size), got, err)
			}
			ghost := p.unregistered("ghost")
			got, err := ghost.Poll(p.ctx, p.db, "t", 0)
			ppcWantNone(t, "Poll(t, 0) by an unregistered owner", got, err)
			p.wantUnchanged(before)
		},
		"MarksActiveWithOwner": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c")
			polled := p.poll("t", 2)
			for _, task := range polled {
				info := p.info("t", task.Sequence)
				if info.State != taskapi.Active || info.Owner != Owner {
					t.Errorf("polled task %v is %v owned by %q, want ACTIVE owned by %q", task, info.State, info.Owner, Owner)
				}
				if info.Descent != taskapi.Ready || !info.Completed.IsZero() || info.Output != "" {
					t.Errorf("polled task %s, want descent READY, no completion time, no output", ppcFormat(info))
				}
			}
			if info := p.info("t", tasks[2].Sequence); info.State != taskapi.Ready || info.Owner != "" {
				t.Errorf("unpolled task is %v owned by %q, want READY without owner", info.State, info.Owner)
			}
			got, err := p.other().Poll(p.ctx, p.db, "t", 10)
			if err != nil {
				t.Fatalf("Poll by %s: %v", ppcOther, err)
			}
			ppcWantTasks(t, "Poll by "+ppcOther, got, tasks[2:])
			if info := p.info("t", tasks[2].Sequence); info.Owner != ppcOther {
				t.Errorf("task polled by %s has owner %q", ppcOther, info.Owner)
			}
			if again := p.poll("t", 10); len(again) != 0 {
				t.Errorf("Poll after all tasks were taken = %v, want nothing", again)
			}
		},
		"KeepsDescent": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			reset := p.resetTask("t", "a")
			ppcWantTasks(t, "Poll", p.poll("t", 1), []taskapi.Task{reset})
			if info := p.info("t", reset.Sequence); info.State != taskapi.Active || info.Descent != taskapi.Succeeded {
				t.Errorf("polled reset task is %v with descent %v, want ACTIVE with descent SUCCEEDED", info.State, info.Descent)
			}
		},
		"UnknownTopicIsEmpty": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			task := p.pushIDs("t", "a")[0]
			for _, opts := range [][]taskapi.PollOption{nil, {taskapi.LIFO}, {taskapi.SingularByIdentifierSuspendUntilSuccess}} {
				got, err := p.repo.Poll(p.ctx, p.db, "unknown", 10, opts...)
				ppcWantNone(t, fmt.Sprintf("Poll(unknown, 10, %v)", opts), got, err)
			}
			p.wantState("t", task.Sequence, taskapi.Ready)
		},
		"UnregisteredOwnerFails": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			p.pushIDs("t", "a", "b")
			before := p.snapshot("t")
			ghost := p.unregistered("ghost")
			_, err := ghost.Poll(p.ctx, p.db, "t", 5)
			wantErr(t, err, taskapi.ErrUnknownOwner)
			_, ok, err := taskapi.PollOne(p.ctx, taskapi.Source[Tx](ghost), p.db, "t", taskapi.LIFO)
			if ok || !errors.Is(err, taskapi.ErrUnknownOwner) {
				t.Errorf("PollOne by an unregistered owner = %v, %v, want false, %v", ok, err, taskapi.ErrUnknownOwner)
			}
			p.wantUnchanged(before)
		},
		"PollOne": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "b", "c", "a")
			src := taskapi.Source[Tx](p.repo)
			for i, step := range []struct {
				opts []taskapi.PollOption
				want taskapi.Task
			}{
				{nil, tasks[0]},
				{[]taskapi.PollOption{taskapi.LIFO, taskapi.SingularByIdentifier}, tasks[2]},
				{[]taskapi.PollOption{taskapi.SingularByIdentifier}, tasks[1]},
			} {
				got, ok, err := taskapi.PollOne(p.ctx, src, p.db, "t", step.opts...)
				if err != nil || !ok || got != step.want {
					t.Errorf("PollOne #%d (%v) = %v, %v, %v, want %v, true, nil", i, step.opts, got, ok, err, step.want)
				}
			}
			// Only the second a is left, and a is Active.
			got, ok, err := taskapi.PollOne(p.ctx, src, p.db, "t", taskapi.SingularByIdentifier)
			if err != nil || ok || got != (taskapi.Task{}) {
				t.Errorf("PollOne with only a blocked task = %v, %v, %v, want zero, false, nil", got, ok, err)
			}
			if got, ok, err := taskapi.PollOne(p.ctx, src, p.db, "t"); err != nil || !ok || got != tasks[3] {
				t.Errorf("PollOne = %v, %v, %v, want %v, true, nil", got, ok, err, tasks[3])
			}
			got, ok, err = taskapi.PollOne(p.ctx, src, p.db, "t")
			if err != nil || ok || got != (taskapi.Task{}) {
				t.Errorf("PollOne of an empty topic = %v, %v, %v, want zero, false, nil", got, ok, err)
			}
		},
		"UnconditionalIgnoresIdentifiers": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "a")
			ppcWantTasks(t, "Poll(t, 1)", p.poll("t", 1), tasks[:1])
			ppcWantTasks(t, "Poll(t, 10)", p.poll("t", 10), tasks[1:])
		},
		"SingularActiveBlocksIdentifier": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			a1 := p.pushIDs("t", "a")[0]
			ppcWantTasks(t, "Poll", p.poll("t", 1), []taskapi.Task{a1})
			more := p.pushIDs("t", "a", "b", "a")
			a2, bb, a3 := more[0], more[1], more[2]
			ppcWantTasks(t, "Poll(Singular)", p.poll("t", 10, taskapi.SingularByIdentifier), []taskapi.Task{bb})
			if got := p.poll("t", 10, taskapi.SingularByIdentifier, taskapi.LIFO); len(got) != 0 {
				t.Errorf("Poll(Singular, LIFO) while a is Active = %v, want nothing", got)
			}
			p.complete("t", taskapi.Success, a1)
			ppcWantTasks(t, "Poll(Singular, LIFO) after a1 completed",
				p.poll("t", 10, taskapi.SingularByIdentifier, taskapi.LIFO), []taskapi.Task{a3})
			if got := p.poll("t", 10, taskapi.SingularByIdentifier); len(got) != 0 {
				t.Errorf("Poll(Singular, FIFO) while a3 is Active = %v, want nothing", got)
			}
			p.complete("t", taskapi.Failure, a3)
			ppcWantTasks(t, "Poll(Singular) after a3 completed",
				p.poll("t", 10, taskapi.SingularByIdentifier), []taskapi.Task{a2})
		},
		"SingularActiveOfOtherOwnerBlocks": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			a1 := p.pushIDs("t", "a")[0]
			if got, err := p.other().Poll(p.ctx, p.db, "t", 1); err != nil || len(got) != 1 || got[0] != a1 {
				t.Fatalf("Poll by %s = %v, %v, want [%v]", ppcOther, got, err, a1)
			}
			p.pushIDs("t", "a")
			if got := p.poll("t", 10, taskapi.SingularByIdentifier); len(got) != 0 {
				t.Errorf("Poll(Singular) while %s holds a = %v, want nothing", ppcOther, got)
			}
		},
		"SingularFIFOTakesOldestOfEachIdentifierOnce": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "b", "a", "c", "b")
			ppcWantTasks(t, "Poll(t, 10, Singular)", p.poll("t", 10, taskapi.SingularByIdentifier),
				[]taskapi.Task{tasks[0], tasks[2], tasks[4]})
			for _, i := range []int{1, 3, 5} {
				p.wantState("t", tasks[i].Sequence, taskapi.Ready)
			}
		},
		"SingularLIFOTakesNewestOfEachIdentifierOnce": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "b", "a", "c", "b")
			ppcWantTasks(t, "Poll(t, 10, Singular, LIFO)", p.poll("t", 10, taskapi.SingularByIdentifier, taskapi.LIFO),
				[]taskapi.Task{tasks[5], tasks[4], tasks[3]})
			for _, i := range []int{0, 1, 2} {
				p.wantState("t", tasks[i].Sequence, taskapi.Ready)
			}
		},
		"SingularEarlierReadyBlocksButDoesNotCountTowardsSize": func(t *testing.T) {
			p := ppcSetup(t, b, "t", "u")
			// FIFO: the second a waits behind the earlier Ready a, and the
			// batch of two is filled with b instead.
			tasks := p.pushIDs("t", "a", "a", "b", "b", "c")
			ppcWantTasks(t, "Poll(t, 2, Singular)", p.poll("t", 2, taskapi.SingularByIdentifier),
				[]taskapi.Task{tasks[0], tasks[2]})
			// LIFO: the first b waits behind the later Ready b (earlier in
			// LIFO order), and the batch of three is filled with an a.
			tasks = p.pushIDs("u", "a", "a", "b", "b", "c")
			ppcWantTasks(t, "Poll(u, 3, Singular, LIFO)", p.poll("u", 3, taskapi.SingularByIdentifier, taskapi.LIFO),
				[]taskapi.Task{tasks[4], tasks[3], tasks[1]})
			p.wantState("u", tasks[0].Sequence, taskapi.Ready)
			p.wantState("u", tasks[2].Sequence, taskapi.Ready)
		},
		"SingularHoldsAcrossMixedOrders": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "a", "b")
			ppcWantTasks(t, "Poll(t, 2, Singular, LIFO)", p.poll("t", 2, taskapi.SingularByIdentifier, taskapi.LIFO),
				[]taskapi.Task{tasks[3], tasks[2]})
			if got := p.poll("t", 10, taskapi.SingularByIdentifier); len(got) != 0 {
				t.Errorf("Poll(Singular, FIFO) while the newest a is Active = %v, want nothing", got)
			}
			p.complete("t", taskapi.Success, tasks[2], tasks[3])
			ppcWantTasks(t, "Poll(t, 10, Singular)", p.poll("t", 10, taskapi.SingularByIdentifier), tasks[:1])
			if got := p.poll("t", 10, taskapi.SingularByIdentifier, taskapi.LIFO); len(got) != 0 {
				t.Errorf("Poll(Singular, LIFO) while the oldest a is Active = %v, want nothing", got)
			}
		},
		"SingularBlockedIdentifierDoesNotHoldUpOthers": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			a := p.pushIDs("t", "a")[0]
			ppcWantTasks(t, "Poll", p.poll("t", 1), []taskapi.Task{a})
			tasks := p.pushIDs("t", "a", "a", "b", "a", "c", "a", "d", "e")
			ppcWantTasks(t, "Poll(t, 3, Singular)", p.poll("t", 3, taskapi.SingularByIdentifier),
				[]taskapi.Task{tasks[2], tasks[4], tasks[6]})
			ppcWantTasks(t, "Poll(t, 3, Singular, LIFO)", p.poll("t", 3, taskapi.SingularByIdentifier, taskapi.LIFO),
				[]taskapi.Task{tasks[7]})
		},
		"ConditionUnconditional": conditionCase([]taskapi.PollOption{taskapi.Unconditional},
			"active", "expired", "failed", "suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSingularByIdentifier": conditionCase([]taskapi.PollOption{taskapi.SingularByIdentifier},
			"expired", "failed", "suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSuspendOnFailure": conditionCase([]taskapi.PollOption{taskapi.SingularByIdentifierSuspendOnFailure},
			"suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSuspendUntilSuccess": conditionCase([]taskapi.PollOption{taskapi.SingularByIdentifierSuspendUntilSuccess},
			"filtered", "succeeded", "free"),
		// AwaitRevival adds Expired to the blockers of the conditions (only
		// Expired: a Failed task still blocks nothing under
		// SingularByIdentifier) and changes nothing without one.
		"ConditionUnconditionalAwaitRevival": conditionCase([]taskapi.PollOption{taskapi.AwaitRevival{}},
			"active", "expired", "failed", "suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSingularByIdentifierAwaitRevival": conditionCase(
			[]taskapi.PollOption{taskapi.SingularByIdentifier, taskapi.AwaitRevival{}},
			"failed", "suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSuspendOnFailureAwaitRevival": conditionCase(
			[]taskapi.PollOption{taskapi.AwaitRevival{}, taskapi.SingularByIdentifierSuspendOnFailure},
			"suspended", "pushed-suspended", "filtered", "succeeded", "free"),
		"ConditionSuspendUntilSuccessAwaitRevival": conditionCase(
			[]taskapi.PollOption{taskapi.SingularByIdentifierSuspendUntilSuccess, taskapi.AwaitRevival{}},
			"filtered", "succeeded", "free"),
		"SuspendOnFailureAlsoHoldsSingular": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			tasks := p.pushIDs("t", "a", "a", "b")
			ppcWantTasks(t, "Poll(t, 10, SuspendOnFailure)",
				p.poll("t", 10, taskapi.SingularByIdentifierSuspendOnFailure), []taskapi.Task{tasks[0], tasks[2]})
			if got := p.poll("t", 10, taskapi.SingularByIdentifierSuspendUntilSuccess); len(got) != 0 {
				t.Errorf("Poll(SuspendUntilSuccess) while a is Active = %v, want nothing", got)
			}
			p.complete("t", taskapi.Success, tasks[0])
			ppcWantTasks(t, "Poll(t, 10, SuspendUntilSuccess) after success",
				p.poll("t", 10, taskapi.SingularByIdentifierSuspendUntilSuccess), tasks[1:2])
		},
		"SuspensionLiftsWhenBlockerLeaves": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			failed := p.inState("t", "a", taskapi.Failed)
			next := p.pushIDs("t", "a")[0]
			if got := p.poll("t", 10, taskapi.SingularByIdentifierSuspendOnFailure); len(got) != 0 {
				t.Fatalf("Poll(SuspendOnFailure) after a failure = %v, want nothing", got)
			}
			// Reassigning the failed task to Success lifts the block.
			if err := p.repo.Reassign(p.ctx, p.db, "t", taskapi.Assignment{Task: failed, Result: taskapi.Success}); err != nil {
				t.Fatalf("Reassign: %v", err)
			}
			ppcWantTasks(t, "Poll(SuspendOnFailure) after the failure was reassigned",
				p.poll("t", 10, taskapi.SingularByIdentifierSuspendOnFailure), []taskapi.Task{next})
		},
		// Under SingularByIdentifier with AwaitRevival the later tasks of an
		// identifier wait behind its Expired task until it is revived in
		// its place and done, while the other identifiers are polled: the
		// identifier's FIFO order holds across the crash of the consumer
		// that held it.
		"AwaitRevivalKeepsAnIdentifiersOrderAcrossExpiry": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			expired := p.inState("t", "a", taskapi.Expired)
			tasks := p.pushIDs("t", "a", "b", "a", "c")
			a2, bb, a3, c := tasks[0], tasks[1], tasks[2], tasks[3]
			await := []taskapi.PollOption{taskapi.SingularByIdentifier, taskapi.AwaitRevival{}}
			ppcWantTasks(t, "Poll(t, 10, Singular, AwaitRevival) while a is Expired",
				p.poll("t", 10, await...), []taskapi.Task{bb, c})
			if got := p.poll("t", 10, await...); len(got) != 0 {
				t.Fatalf("Poll(t, 10, Singular, AwaitRevival) again while a is Expired = %v, want nothing", got)
			}
			revivals, err := p.repo.ReviveTasks(p.ctx, p.db, "t", taskapi.ReviveReset, expired)
			if err != nil || len(revivals) != 1 || revivals[0] != (taskapi.Revival{Previous: expired, Current: expired}) {
				t.Fatalf("ReviveTasks(t, ReviveReset, %v) = %v, %v; want it revived in place", expired, revivals, err)
			}
			ppcWantTasks(t, "Poll(t, 10, Singular, AwaitRevival) after the revival",
				p.poll("t", 10, await...), []taskapi.Task{expired})
			if got := p.poll("t", 10, await...); len(got) != 0 {
				t.Fatalf("Poll(t, 10, Singular, AwaitRevival) while the revived a is Active = %v, want nothing", got)
			}
			p.complete("t", taskapi.Success, expired)
			ppcWantTasks(t, "Poll(t, 10, Singular, AwaitRevival) after the revived a succeeded",
				p.poll("t", 10, await...), []taskapi.Task{a2})
			p.complete("t", taskapi.Failure, a2)
			ppcWantTasks(t, "Poll(t, 10, Singular, AwaitRevival) after the second a failed",
				p.poll("t", 10, await...), []taskapi.Task{a3})
		},
		// Without AwaitRevival an Expired task blocks nothing under
		// SingularByIdentifier: the later task of its identifier is polled.
		"SingularPassesAnExpiredTaskWithoutAwaitRevival": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			expired := p.inState("t", "a", taskapi.Expired)
			tasks := p.pushIDs("t", "a", "b")
			ppcWantTasks(t, "Poll(t, 10, Singular) while a is Expired",
				p.poll("t", 10, taskapi.SingularByIdentifier), tasks)
			p.wantState("t", expired.Sequence, taskapi.Expired)
		},
		// A LIFO poll waits behind the Expired task as well; once it is
		// revived, the newest task of the identifier comes first again, as
		// LIFO has it. The option given twice says it once.
		"AwaitRevivalLIFOWaitsToo": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			expired := p.inState("t", "a", taskapi.Expired)
			tasks := p.pushIDs("t", "a", "a", "b")
			await := []taskapi.PollOption{taskapi.LIFO, taskapi.AwaitRevival{}, taskapi.SingularByIdentifier, taskapi.AwaitRevival{}}
			ppcWantTasks(t, "Poll(t, 10, LIFO, AwaitRevival, Singular, AwaitRevival) while a is Expired",
				p.poll("t", 10, await...), tasks[2:])
			if got := p.poll("t", 10, await...); len(got) != 0 {
				t.Fatalf("Poll(t, 10, LIFO, Singular, AwaitRevival) again while a is Expired = %v, want nothing", got)
			}
			if _, err := p.repo.ReviveTasks(p.ctx, p.db, "t", taskapi.ReviveReset, expired); err != nil {
				t.Fatalf("ReviveTasks(t, ReviveReset, %v): %v", expired, err)
			}
			ppcWantTasks(t, "Poll(t, 10, LIFO, Singular, AwaitRevival) after the revival",
				p.poll("t", 10, await...), tasks[1:2])
			p.wantState("t", expired.Sequence, taskapi.Ready)
		},
		// Without a condition AwaitRevival changes nothing: the poll takes
		// every Ready task, of an identifier with an Expired task too.
		"AwaitRevivalAloneIsUnconditional": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			p.inState("t", "a", taskapi.Expired)
			tasks := p.pushIDs("t", "a", "a", "b")
			ppcWantTasks(t, "Poll(t, 10, AwaitRevival) while a is Expired",
				p.poll("t", 10, taskapi.AwaitRevival{}), tasks)
		},
		"TopicsAreIsolated": func(t *testing.T) {
			p := ppcSetup(t, b, "t", "u")
			inT := p.pushIDs("t", "a", "b")
			inU := p.pushIDs("u", "a", "c")
			ppcWantTasks(t, "Poll(t, 1)", p.poll("t", 1), inT[:1])
			// a is Active in t; in u it is free.
			ppcWantTasks(t, "Poll(u, 10, Singular)", p.poll("u", 10, taskapi.SingularByIdentifier), inU)
			ppcWantTasks(t, "Poll(t, 10)", p.poll("t", 10), inT[1:])
			p.complete("t", taskapi.Failure, inT[0])
			p.complete("u", taskapi.Success, inU[0])
			// a failed in t; in u it is not blocked by that.
			more := p.pushIDs("u", "a")
			ppcWantTasks(t, "Poll(u, 10, SuspendUntilSuccess)",
				p.poll("u", 10, taskapi.SingularByIdentifierSuspendUntilSuccess), more)
			// and an Active a in u does not block a in t, while the failure in t does.
			moreT := p.pushIDs("t", "a")
			if got := p.poll("t", 10, taskapi.SingularByIdentifierSuspendOnFailure); len(got) != 0 {
				t.Errorf("Poll(t, SuspendOnFailure) after a failed in t = %v, want nothing", got)
			}
			ppcWantTasks(t, "Poll(t, 10, Singular)", p.poll("t", 10, taskapi.SingularByIdentifier), moreT)
		},
		"ConcurrentPollersNeverShareATask": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			const total, pollers, size = 200, 4, 5
			ids := make([]string, total)
			for i := range ids {
				ids[i] = fmt.Sprintf("task-%03d", i)
			}
			pushed := p.pushIDs("t", ids...)
			repos := make([]taskapi.Repository[Tx], pollers)
			for i := range repos {
				repos[i] = p.owner(fmt.Sprintf("poller-%d", i))
			}
			ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
			defer cancel()
			received := make([][]taskapi.Task, pollers)
			var wg sync.WaitGroup
			for i, repo := range repos {
				wg.Go(func() {
					for range total {
						got, err := repo.Poll(ctx, p.db, "t", size)
						if err != nil {
							t.Errorf("Poll by %s: %v", repo.Owner(), err)
							return
						}
						if len(got) == 0 {
							return
						}
						if len(got) > size {
							t.Errorf("Poll(t, %d) by %s returned %d tasks", size, repo.Owner(), len(got))
						}
						if !slices.IsSortedFunc(got, func(x, y taskapi.Task) int { return int(x.Sequence - y.Sequence) }) {
							t.Errorf("FIFO batch %v is not in ascending order", sequences(got))
						}
						received[i] = append(received[i], got...)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			seen := map[taskapi.Task]string{}
			for i, tasks := range received {
				for _, task := range tasks {
					if prev, dup := seen[task]; dup {
						t.Errorf("task %v received by %s and by %s", task, prev, repos[i].Owner())
					}
					seen[task] = repos[i].Owner()
				}
			}
			for _, task := range pushed {
				if _, ok := seen[task]; !ok {
					t.Errorf("task %v was never received", task)
				}
			}
			if len(seen) != total {
				t.Errorf("received %d distinct tasks, want %d", len(seen), total)
			}
			for _, info := range p.all("t") {
				if info.State != taskapi.Active || info.Owner != seen[info.Task] {
					t.Errorf("task %d is %v owned by %q, want ACTIVE owned by %q, who received it",
						info.Sequence, info.State, info.Owner, seen[info.Task])
				}
			}
			if got := p.poll("t", 10); len(got) != 0 {
				t.Errorf("Poll after the pollers emptied the topic = %v, want nothing", got)
			}
		},
		"ConcurrentSingularNeverHoldsAnIdentifierTwice": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			const identifiers, perIdentifier, pollers, size = 6, 20, 4, 3
			const total = identifiers * perIdentifier
			ids := make([]string, total)
			for i := range ids {
				ids[i] = fmt.Sprintf("id-%d", i%identifiers)
			}
			p.pushIDs("t", ids...)
			repos := make([]taskapi.Repository[Tx], pollers)
			for i := range repos {
				repos[i] = p.owner(fmt.Sprintf("poller-%d", i))
			}
			ctx, cancel := context.WithTimeout(p.ctx, 2*time.Minute)
			defer cancel()
			var (
				mu      sync.Mutex
				holders = map[string]string{}  // identifier -> owner holding it now
				order   = map[string][]int64{} // identifier -> sequences in poll order
				done    atomic.Int64
			)
			var wg sync.WaitGroup
			for _, repo := range repos {
				wg.Go(func() {
					for done.Load() < total {
						if ctx.Err() != nil {
							t.Errorf("%s: gave up with %d of %d tasks done: %v", repo.Owner(), done.Load(), total, ctx.Err())
							return
						}
						got, err := repo.Poll(ctx, p.db, "t", size, taskapi.SingularByIdentifier)
						if err != nil {
							t.Errorf("Poll by %s: %v", repo.Owner(), err)
							return
						}
						if len(got) == 0 {
							time.Sleep(time.Millisecond)
							continue
						}
						batch := map[string]bool{}
						mu.Lock()
						for _, task := range got {
							if batch[task.Identifier] {
								t.Errorf("one batch of %s holds identifier %s twice: %v", repo.Owner(), task.Identifier, got)
							}
							batch[task.Identifier] = true
							if holder, held := holders[task.Identifier]; held {
								t.Errorf("%s polled %v while %s holds identifier %s", repo.Owner(), task, holder, task.Identifier)
							}
							holders[task.Identifier] = repo.Owner()
							order[task.Identifier] = append(order[task.Identifier], task.Sequence)
						}
						mu.Unlock()
						time.Sleep(100 * time.Microsecond)
						// Release before completing: until Complete commits the
						// tasks are Active, so nobody else may take them meanwhile.
						mu.Lock()
						for _, task := range got {
							delete(holders, task.Identifier)
						}
						mu.Unlock()
						completions := make([]taskapi.Completion, len(got))
						for i, task := range got {
							completions[i] = ppcDone(task, taskapi.Success, "")
						}
						if err := repo.Complete(ctx, p.db, "t", completions...); err != nil {
							t.Errorf("Complete by %s: %v", repo.Owner(), err)
							return
						}
						done.Add(int64(len(got)))
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for id, seqs := range order {
				if !slices.IsSorted(seqs) {
					t.Errorf("identifier %s was polled out of FIFO order: %v", id, seqs)
				}
				if len(seqs) != perIdentifier {
					t.Errorf("identifier %s was polled %d times, want %d", id, len(seqs), perIdentifier)
				}
			}
			for _, info := range p.all("t") {
				if info.State != taskapi.Succeeded {
					t.Errorf("task %d is %v, want SUCCEEDED", info.Sequence, info.State)
				}
			}
		},
	})
}
