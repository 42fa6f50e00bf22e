package conformance

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testPush checks Push: sequences and the order of returned tasks, Suspended
// creations, empty and failing pushes, the four insertion modes (within the
// batch and towards older tasks), and what Lookup reads back from a new task.
func testPush[Tx any](t *testing.T, b Backend[Tx]) {
	// redundantIf returns a fate that makes the older tasks of identifier id
	// that are in one of states Redundant, with descent max(state, descent),
	// and leaves every other task as it was.
	redundantIf := func(id string, states ...taskapi.State) func(taskapi.Info) (taskapi.Info, bool, bool) {
		return func(old taskapi.Info) (taskapi.Info, bool, bool) {
			if old.Identifier != id || !slices.Contains(states, old.State) {
				return taskapi.Info{}, false, false
			}
			return taskapi.Info{State: taskapi.Redundant, Descent: max(old.State, old.Descent)}, true, false
		}
	}
	replaceable := []taskapi.State{
		taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded,
	}
	unchanged := func(taskapi.Info) (taskapi.Info, bool, bool) { return taskapi.Info{}, false, false }

	// olderTasks builds a zoo of identifier "x" in topic "t", bystanders of
	// identifier "y" in "t" and of identifier "x" in "u", pushes one "x" to
	// "t" with insertion and checks the zoo against fate and the bystanders
	// against no change. It returns the case's env and the zoo.
	type fateFunc = func(taskapi.Info) (want taskapi.Info, changed, gone bool)
	olderTasks := func(t *testing.T, insertion taskapi.Insertion, fate fateFunc) (*ppcEnv[Tx], map[string]taskapi.Task) {
		t.Helper()
		p := ppcSetup(t, b, "t", "u")
		zoo := p.zoo("t", "x")
		p.inState("t", "y", taskapi.Ready)
		p.inState("t", "y", taskapi.Succeeded)
		p.inState("u", "x", taskapi.Ready)
		p.inState("u", "x", taskapi.Failed)
		before := p.snapshot("t", "u")
		highest := before["t"][len(before["t"])-1].Sequence

		got := p.push("t", insertion, taskapi.Creation{Identifier: "x", Input: "newest", Reference: "r"})
		if len(got) != 1 || got[0].Identifier != "x" || got[0].Input != "newest" || got[0].Sequence <= highest {
			t.Fatalf("Push(t, %v, x) = %v, want one task x/newest with a sequence above %d", insertion, got, highest)
		}
		if info := p.info("t", got[0].Sequence); info.State != taskapi.Ready || info.Descent != taskapi.Ready {
			t.Errorf("pushed task is %v with descent %v, want READY with descent READY", info.State, info.Descent)
		}
		p.wantFates("t", before["t"], func(old taskapi.Info) (taskapi.Info, bool, bool) {
			if old.Identifier != "x" {
				return unchanged(old)
			}
			return fate(old)
		})
		p.wantFates("u", before["u"], unchanged)
		if n := len(p.all("u")); n != len(before["u"]) {
			t.Errorf("topic u holds %d tasks, want %d", n, len(before["u"]))
		}
		return p, zoo
	}

	cases(t, map[string]func(t *testing.T){
		"AppendSequencesStartAtOneInCreationOrder": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			creations := []taskapi.Creation{
				{Identifier: "c", Input: "in-c"},
				{Identifier: "a", Input: "in-a"},
				{Identifier: "b"},
				{Identifier: "a", Input: "in-a2"},
			}
			got := p.push("t", taskapi.Append, creations...)
			if len(got) != len(creations) {
				t.Fatalf("Push returned %d tasks, want %d", len(got), len(creations))
			}
			if got[0].Sequence != 1 {
				t.Errorf("first sequence of a fresh database = %d, want 1", got[0].Sequence)
			}
			for i, task := range got {
				if task.Identifier != creations[i].Identifier || task.Input != creations[i].Input {
					t.Errorf("task %d = %v, want identifier %q and input %q", i, task, creations[i].Identifier, creations[i].Input)
				}
				if i > 0 && task.Sequence <= got[i-1].Sequence {
					t.Errorf("sequences %v do not increase in creation order", sequences(got))
				}
			}
			infos := p.all("t")
			if len(infos) != len(got) {
				t.Fatalf("topic holds %d tasks, want %d", len(infos), len(got))
			}
			for i, info := range infos {
				if info.Task != got[i] {
					t.Errorf("stored task %d = %v, want %v", i, info.Task, got[i])
				}
			}
		},
		"SequencesAreSharedAcrossTopics": func(t *testing.T) {
			p := ppcSetup(t, b, "t", "u")
			first := p.pushIDs("t", "a")[0]
			second := p.pushIDs("u", "a", "b")
			third := p.pushIDs("t", "c")[0]
			all := []int64{first.Sequence, second[0].Sequence, second[1].Sequence, third.Sequence}
			for i := range all {
				if all[0] != 1 || i > 0 && all[i] <= all[i-1] {
					t.Errorf("sequences over two topics = %v, want 1 first and strictly increasing", all)
					break
				}
			}
			if _, ok, err := p.repo.Lookup(p.ctx, p.db, "u", first.Sequence); err != nil || ok {
				t.Errorf("Lookup(u, %d) = %v, %v, want false: that sequence belongs to topic t", first.Sequence, ok, err)
			}
		},
		"AppendKeepsEveryDuplicate": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			old := p.inState("t", "a", taskapi.Succeeded)
			got := p.pushIDs("t", "a", "a", "b", "a")
			if len(got) != 4 {
				t.Fatalf("Push returned %v, want 4 tasks", got)
			}
			for _, task := range got {
				p.wantState("t", task.Sequence, taskapi.Ready)
			}
			p.wantState("t", old.Sequence, taskapi.Succeeded)
		},
		"AppendLeavesOlderTasksAlone": func(t *testing.T) {
			olderTasks(t, taskapi.Append, unchanged)
		},
		"NewTaskDefaults": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			got := p.push("t", taskapi.Append,
				taskapi.Creation{Identifier: "a", Input: "in", Reference: "ref"},
				taskapi.Creation{Identifier: "b", Suspended: true})
			for _, task := range got {
				info := p.info("t", task.Sequence)
				if info.Task != task {
					t.Errorf("Lookup(%d).Task = %v, want %v", task.Sequence, info.Task, task)
				}
				if info.Descent != taskapi.Ready {
					t.Errorf("new task %d has descent %v, want READY", task.Sequence, info.Descent)
				}
				if info.Owner != "" || info.Output != "" {
					t.Errorf("new task %d has owner %q and output %q, want both empty", task.Sequence, info.Owner, info.Output)
				}
				if !info.Completed.IsZero() {
					t.Errorf("new task %d has completion time %v, want zero", task.Sequence, info.Completed)
				}
				ppcWantTime(t, "Created", info.Created)
			}
			for _, info := range p.all("t") {
				if info.Created.Location() != time.UTC {
					t.Errorf("Page: Created %v of task %d is not in UTC", info.Created, info.Sequence)
				}
			}
		},
		"SuspendedCreations": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			got := p.push("t", taskapi.Append,
				taskapi.Creation{Identifier: "a", Suspended: true},
				taskapi.Creation{Identifier: "b"},
				taskapi.Creation{Identifier: "c", Suspended: true})
			want := []taskapi.State{taskapi.Suspended, taskapi.Ready, taskapi.Suspended}
			for i, task := range got {
				info := p.info("t", task.Sequence)
				if info.State != want[i] || info.Descent != taskapi.Ready {
					t.Errorf("task %s is %v with descent %v, want %v with descent READY", task.Identifier, info.State, info.Descent, want[i])
				}
			}
			polled := p.poll("t", 10)
			ppcWantTasks(t, "Poll", polled, got[1:2])
		},
		"EmptyPushIsNoOp": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			for _, insertion := range []taskapi.Insertion{taskapi.Append, taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
				for _, topic := range []string{"t", "unknown"} {
					got, err := p.repo.Push(p.ctx, p.db, topic, insertion)
					ppcWantNone(t, "Push("+topic+", "+insertion.String()+") without creations", got, err)
					got, err = p.repo.Push(p.ctx, p.db, topic, insertion, []taskapi.Creation{}...)
					ppcWantNone(t, "Push("+topic+", "+insertion.String()+", empty slice)", got, err)
				}
			}
			if infos := p.all("t"); len(infos) != 0 {
				t.Fatalf("topic holds %d tasks after empty pushes, want none", len(infos))
			}
			if topics, err := p.repo.Topics(p.ctx, p.db); err != nil || !slices.Equal(topics, []string{"t"}) {
				t.Errorf("Topics = %v, %v, want [t]: an empty push registers nothing", topics, err)
			}
			if got := p.pushIDs("t", "a"); got[0].Sequence != 1 {
				t.Errorf("first task after empty pushes has sequence %d, want 1: an empty push uses no sequence", got[0].Sequence)
			}
		},
		"EmptyTopicNameIsInvalidEvenWithoutCreations": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			_, err := p.repo.Push(p.ctx, p.db, "", taskapi.Append)
			wantErr(t, err, taskapi.ErrInvalidArgument)
		},
		"UnknownTopicStoresNothing": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			before := p.snapshot("t")
			// One creation and several take different paths in a backend.
			for _, creations := range [][]taskapi.Creation{{{Identifier: "a"}}, {{Identifier: "a"}, {Identifier: "b"}}} {
				got, err := p.repo.Push(p.ctx, p.db, "unknown", taskapi.Append, creations...)
				wantErr(t, err, taskapi.ErrUnknownTopic)
				if len(got) != 0 {
					t.Errorf("failed Push of %d returned %v, want no tasks", len(creations), got)
				}
			}
			if infos := p.all("unknown"); len(infos) != 0 {
				t.Errorf("Page(unknown) = %d tasks, want none", len(infos))
			}
			if topics, err := p.repo.Topics(p.ctx, p.db); err != nil || !slices.Equal(topics, []string{"t"}) {
				t.Errorf("Topics = %v, %v, want [t]: a failed push registers nothing", topics, err)
			}
			p.wantUnchanged(before)

			// In the caller's transaction the failure leaves the transaction usable.
			tx, end, err := b.Begin(p.ctx, p.db)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			for _, insertion := range []taskapi.Insertion{taskapi.Append, taskapi.Replace} {
				_, err = p.repo.Push(p.ctx, tx, "unknown", insertion, taskapi.Creation{Identifier: "a"})
				if !errors.Is(err, taskapi.ErrUnknownTopic) {
					_ = end(false)
					t.Fatalf("Push(unknown, %v) in a transaction: error = %v, want %v", insertion, err, taskapi.ErrUnknownTopic)
				}
			}
			kept, err := p.repo.Push(p.ctx, tx, "t", taskapi.Append, taskapi.Creation{Identifier: "k", Input: "kept"})
			if err != nil {
				_ = end(false)
				t.Fatalf("Push(t) after a failed push in the same transaction: %v", err)
			}
			if err := end(true); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if info := p.info("t", kept[0].Sequence); info.Task != kept[0] || info.State != taskapi.Ready {
				t.Errorf("task pushed after the failure = %s, want %v Ready", ppcFormat(info), kept[0])
			}
			if infos := p.all("t"); len(infos) != 1 {
				t.Errorf("topic t holds %d tasks, want 1", len(infos))
			}
		},
		"ReplaceWithinBatch": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			creations := []taskapi.Creation{
				{Identifier: "a", Input: "a1"},
				{Identifier: "b", Input: "b1", Suspended: true},
				{Identifier: "a", Input: "a2", Suspended: true},
				{Identifier: "c", Input: "c1"},
				{Identifier: "b", Input: "b2"},
				{Identifier: "a", Input: "a3"},
				{Identifier: "d", Input: "d1", Suspended: true},
			}
			got := p.push("t", taskapi.Replace, creations...)
			want := []taskapi.State{
				taskapi.Redundant, taskapi.Redundant, taskapi.Redundant, taskapi.Ready,
				taskapi.Ready, taskapi.Ready, taskapi.Suspended,
			}
			ppcCheckBatch(p, got, creations, want)
		},
		"ReplaceMakesOlderTasksRedundant": func(t *testing.T) {
			p, zoo := olderTasks(t, taskapi.Replace, redundantIf("x", replaceable...))
			if info := p.info("t", zoo["active"].Sequence); info.State != taskapi.Active || info.Owner != Owner {
				t.Errorf("Active task is %v owned by %q after Replace, want it left Active with %q", info.State, info.Owner, Owner)
			}
			if info := p.info("t", zoo["reset"].Sequence); info.Descent != taskapi.Succeeded {
				t.Errorf("reset task has descent %v after Replace, want SUCCEEDED (max of READY and SUCCEEDED)", info.Descent)
			}
			if info := p.info("t", zoo["failed"].Sequence); info.Descent != taskapi.Failed {
				t.Errorf("failed task has descent %v after Replace, want FAILED", info.Descent)
			}
		},
		"ReplaceBatchAndOlderTogether": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			older := p.inState("t", "a", taskapi.Filtered)
			other := p.inState("t", "b", taskapi.Ready)
			got := p.push("t", taskapi.Replace,
				taskapi.Creation{Identifier: "a", Input: "first"},
				taskapi.Creation{Identifier: "a", Input: "second"})
			if len(got) != 2 {
				t.Fatalf("Push returned %v, want 2 tasks", got)
			}
			if info := p.info("t", older.Sequence); info.State != taskapi.Redundant || info.Descent != taskapi.Filtered {
				t.Errorf("older task is %v with descent %v, want REDUNDANT with descent FILTERED", info.State, info.Descent)
			}
			p.wantState("t", got[0].Sequence, taskapi.Redundant)
			p.wantState("t", got[1].Sequence, taskapi.Ready)
			p.wantState("t", other.Sequence, taskapi.Ready)
		},
		"SupersedeWithinBatch": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			creations := []taskapi.Creation{
				{Identifier: "a", Input: "a1"},
				{Identifier: "b", Input: "b1"},
				{Identifier: "a", Input: "a2"},
				{Identifier: "b", Input: "b2", Suspended: true},
			}
			got := p.push("t", taskapi.Supersede, creations...)
			want := []taskapi.State{taskapi.Redundant, taskapi.Redundant, taskapi.Ready, taskapi.Suspended}
			ppcCheckBatch(p, got, creations, want)
		},
		"SupersedeMakesOnlyOlderReadyTasksRedundant": func(t *testing.T) {
			p, zoo := olderTasks(t, taskapi.Supersede, redundantIf("x", taskapi.Ready))
			for _, name := range []string{"failed", "suspended", "pushed-suspended", "succeeded", "expired", "active"} {
				if info := p.info("t", zoo[name].Sequence); info.State == taskapi.Redundant {
					t.Errorf("%s task became REDUNDANT under Supersede", name)
				}
			}
			if info := p.info("t", zoo["reset"].Sequence); info.State != taskapi.Redundant || info.Descent != taskapi.Succeeded {
				t.Errorf("reset Ready task is %v with descent %v, want REDUNDANT with descent SUCCEEDED", info.State, info.Descent)
			}
		},
		"DeleteWithinBatchKeepsLastPerIdentifier": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			got := p.push("t", taskapi.Delete,
				taskapi.Creation{Identifier: "a", Input: "a1"},
				taskapi.Creation{Identifier: "b", Input: "b1"},
				taskapi.Creation{Identifier: "a", Input: "a2"},
				taskapi.Creation{Identifier: "c", Input: "c1", Reference: "rc"},
				taskapi.Creation{Identifier: "a", Input: "a3", Suspended: true},
				taskapi.Creation{Identifier: "b", Input: "b2"})
			wantInputs := []string{"c1", "a3", "b2"}
			if len(got) != len(wantInputs) {
				t.Fatalf("Push(Delete) returned %v, want the tasks %v", got, wantInputs)
			}
			for i, task := range got {
				if task.Input != wantInputs[i] || task.Identifier != wantInputs[i][:1] {
					t.Errorf("returned task %d = %v, want %s with input %s", i, task, wantInputs[i][:1], wantInputs[i])
				}
				if i > 0 && task.Sequence <= got[i-1].Sequence {
					t.Errorf("sequences %v do not increase in creation order", sequences(got))
				}
			}
			infos := p.all("t")
			stored := make([]taskapi.Task, len(infos))
			for i, info := range infos {
				stored[i] = info.Task
			}
			ppcWantTasks(t, "stored tasks", stored, got)
			p.wantState("t", got[0].Sequence, taskapi.Ready)
			p.wantState("t", got[1].Sequence, taskapi.Suspended)
			p.wantState("t", got[2].Sequence, taskapi.Ready)
			if ref := p.info("t", got[0].Sequence).Reference; ref != "rc" {
				t.Errorf("reference of c = %q, want rc", ref)
			}
		},
		"DeleteRemovesOlderTasksButActive": func(t *testing.T) {
			p, zoo := olderTasks(t, taskapi.Delete, func(old taskapi.Info) (taskapi.Info, bool, bool) {
				if old.State == taskapi.Active {
					return taskapi.Info{}, false, false
				}
				return taskapi.Info{}, false, true
			})
			if _, ok, err := p.repo.Lookup(p.ctx, p.db, "t", zoo["recreated"].Sequence); err != nil || ok {
				t.Errorf("Lookup of the Recreated task = %v, %v, want it deleted", ok, err)
			}
			if info := p.info("t", zoo["active"].Sequence); info.State != taskapi.Active || info.Owner != Owner {
				t.Errorf("Active task is %v owned by %q after Delete, want it kept Active", info.State, info.Owner)
			}
		},
		"ReferenceAndInputRoundTrip": func(t *testing.T) {
			p := ppcSetup(t, b, "t")
			long := strings.Repeat("long input ", 20000)
			creations := []taskapi.Creation{
				{Identifier: "json", Input: `{"k": ["v", 1, null]}`, Reference: "ref-1"},
				{Identifier: "absent"},
				{Identifier: "unicode", Input: "  ünïcödé € 😀\n\ttabs and spaces  ", Reference: "réf €"},
				{Identifier: "long", Input: long, Reference: strings.Repeat("r", taskapi.MaxReferenceLength)},
				{Identifier: "ref-only", Reference: "ref-1"},
			}
			got := p.push("t", taskapi.Append, creations...)
			for i, task := range got {
				info := p.info("t", task.Sequence)
				if info.Identifier != creations[i].Identifier || info.Input != creations[i].Input || info.Reference != creations[i].Reference {
					t.Errorf("task %q read back as identifier %q, input %q, reference %q; want %q, %q, %q",
						creations[i].Identifier, info.Identifier, ppcShort(info.Input), ppcShort(info.Reference),
						creations[i].Identifier, ppcShort(creations[i].Input), ppcShort(creations[i].Reference))
				}
				if task.Input != creations[i].Input {
					t.Errorf("returned task %q has input %q, want %q", task.Identifier, ppcShort(task.Input), ppcShort(creations[i].Input))
				}
			}
			byRef, err := p.repo.Page(p.ctx, p.db, "t", taskapi.Listing{Reference: "ref-1"}, taskapi.Inception, 10, taskapi.Forward)
			if err != nil {
				t.Fatalf("Page(reference ref-1): %v", err)
			}
			if len(byRef) != 2 || byRef[0].Task != got[0] || byRef[1].Task != got[4] {
				t.Errorf("Page(reference ref-1) = %d tasks, want json and ref-only", len(byRef))
			}
		},
	})
}

// ppcCheckBatch checks the tasks returned by a Replace or Supersede push of
// creations into topic "t" of a fresh database: every creation returned in
// order with its identifier and input, increasing sequences, and each stored
// in its wanted state with descent Ready.
func ppcCheckBatch[Tx any](p *ppcEnv[Tx], got []taskapi.Task, creations []taskapi.Creation, want []taskapi.State) {
	p.t.Helper()
	if len(got) != len(creations) {
		p.t.Fatalf("Push returned %d tasks %v, want all %d creations", len(got), got, len(creations))
	}
	for i, task := range got {
		if task.Identifier != creations[i].Identifier || task.Input != creations[i].Input {
			p.t.Errorf("returned task %d = %v, want %s/%s", i, task, creations[i].Identifier, creations[i].Input)
		}
		if i > 0 && task.Sequence <= got[i-1].Sequence {
			p.t.Errorf("sequences %v do not increase in creation order", sequences(got))
		}
		info := p.info("t", task.Sequence)
		if info.State != want[i] || info.Descent != taskapi.Ready {
			p.t.Errorf("task %s/%s is %v with descent %v, want %v with descent READY",
				task.Identifier, task.Input, info.State, info.Descent, want[i])
		}
	}
	if n := len(p.all("t")); n != len(creations) {
		p.t.Errorf("topic holds %d tasks, want %d", n, len(creations))
	}
}
