package taskpg_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

func TestPushInsertions(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	old := push(t, repo, db, "t", taskapi.Append, ids("x", "y", "z")...)
	if !slices.IsSorted(sequences(old)) || old[0].Sequence < 1 || old[1].Input != "in-y" {
		t.Fatalf("Push returned %v", old)
	}
	got := push(t, repo, db, "t", taskapi.Replace, ids("x", "x", "y")...)
	if len(got) != 3 || !slices.IsSorted(sequences(got)) {
		t.Fatalf("Replace returned %v", got)
	}
	want := []taskapi.State{
		taskapi.Redundant, taskapi.Redundant, taskapi.Ready, // x, y, z
		taskapi.Redundant, taskapi.Ready, taskapi.Ready, // x, x, y
	}
	if s := states(t, repo, db, "t"); !slices.Equal(s, want) {
		t.Fatalf("after Replace: %v, want %v", s, want)
	}
	got = push(t, repo, db, "t", taskapi.Delete, ids("x", "z", "x")...)
	if len(got) != 2 || got[0].Identifier != "z" || got[1].Identifier != "x" {
		t.Fatalf("Delete returned %v", got)
	}
	want = []taskapi.State{taskapi.Redundant, taskapi.Ready, taskapi.Ready, taskapi.Ready} // y, y, z, x
	if s := states(t, repo, db, "t"); !slices.Equal(s, want) {
		t.Fatalf("after Delete: %v, want %v", s, want)
	}
	push(t, repo, db, "t", taskapi.Supersede, taskapi.Creation{Identifier: "y", Suspended: true})
	want = []taskapi.State{taskapi.Redundant, taskapi.Redundant, taskapi.Ready, taskapi.Ready, taskapi.Suspended}
	if s := states(t, repo, db, "t"); !slices.Equal(s, want) {
		t.Fatalf("after Supersede: %v, want %v", s, want)
	}
	if tasks, err := repo.Push(t.Context(), db, "nowhere", taskapi.Append); err != nil || tasks != nil {
		t.Fatalf("empty Push to unknown topic = %v, %v", tasks, err)
	}
	_, err := repo.Push(t.Context(), db, "nowhere", taskapi.Append, ids("x")...)
	wantErr(t, err, taskapi.ErrUnknownTopic)
	_, err = repo.Push(t.Context(), db, "t", taskapi.Append, taskapi.Creation{Identifier: "x", Input: "a\x00b"})
	wantErr(t, err, taskapi.ErrInvalidArgument)
}

func TestPollAndComplete(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	pushed := push(t, repo, db, "t", taskapi.Append, ids("a", "b", "a", "c")...)
	fifo := poll(t, repo, db, "t", 10, taskapi.SingularByIdentifier)
	if want := []int64{pushed[0].Sequence, pushed[1].Sequence, pushed[3].Sequence}; !slices.Equal(sequences(fifo), want) {
		t.Fatalf("conditional FIFO poll = %v, want %v", sequences(fifo), want)
	}
	if got := poll(t, repo, db, "t", 10, taskapi.SingularByIdentifier); len(got) != 0 {
		t.Fatalf("a is Active, yet polled %v", got)
	}
	complete(t, repo, db, "t", taskapi.Failure, fifo[0])
	if got := poll(t, repo, db, "t", 10, taskapi.SingularByIdentifierSuspendOnFailure); len(got) != 0 {
		t.Fatalf("a failed, yet polled %v", got)
	}
	err := repo.Complete(t.Context(), db, "t", taskapi.Completion{Task: fifo[0]}, taskapi.Completion{Task: fifo[1]})
	wantErr(t, err, taskapi.ErrNotActive)
	if s := states(t, repo, db, "t")[1]; s != taskapi.Active {
		t.Fatalf("failed Complete changed task b to %v", s)
	}
	complete(t, repo, db, "t", taskapi.Success, fifo[1:]...)
	lifo := poll(t, repo, db, "t", 10, taskapi.LIFO)
	if len(lifo) != 1 || lifo[0] != pushed[2] {
		t.Fatalf("LIFO poll = %v, want %v", lifo, pushed[2])
	}
	info, ok, err := repo.Lookup(t.Context(), db, "t", fifo[0].Sequence)
	if err != nil || !ok || info.State != taskapi.Failed || info.Owner != "a" || info.Output != "out" ||
		info.Created.Location() != time.UTC || info.Completed.Location() != time.UTC || info.Completed.Before(info.Created) {
		t.Fatalf("Lookup = %+v, %v, %v", info, ok, err)
	}
	if info, _, _ := repo.Lookup(t.Context(), db, "t", lifo[0].Sequence); !info.Completed.IsZero() {
		t.Fatalf("Active task has Completed %v", info.Completed)
	}
	unregistered, _ := taskpg.New("nobody")
	_, err = unregistered.Poll(t.Context(), db, "t", 1)
	wantErr(t, err, taskapi.ErrUnknownOwner)
}

func TestReviveAndReassign(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	pushed := push(t, repo, db, "t", taskapi.Append, append(ids("a", "b", "c"), taskapi.Creation{Identifier: "a", Reference: "r"})...)
	complete(t, repo, db, "t", taskapi.Failure, poll(t, repo, db, "t", 4)...)
	revivals, err := repo.ReviveTasks(t.Context(), db, "t", taskapi.ReviveReset, pushed[1], pushed[0], pushed[1])
	if err != nil || len(revivals) != 2 || revivals[0].Previous != pushed[1] || revivals[1].Current != pushed[0] {
		t.Fatalf("ReviveTasks(reset) = %v, %v", revivals, err)
	}
	_, err = repo.ReviveTasks(t.Context(), db, "t", taskapi.ReviveReplace, pushed[2], pushed[0])
	wantErr(t, err, taskapi.ErrStateMismatch)
	revivals, err = repo.Revive(t.Context(), db, "t", taskapi.ReviveReplace, taskapi.Failed, taskapi.Unbounded, 10)
	if err != nil || len(revivals) != 2 || revivals[0].Previous != pushed[2] || revivals[1].Previous != pushed[3] {
		t.Fatalf("Revive(replace) = %v, %v", revivals, err)
	}
	info, _, _ := repo.Lookup(t.Context(), db, "t", revivals[1].Current.Sequence)
	if info.Reference != "r" || info.Identifier != "a" || info.State != taskapi.Ready {
		t.Fatalf("revived task = %+v", info)
	}
	want := []taskapi.State{
		taskapi.Redundant, taskapi.Ready, taskapi.Recreated, taskapi.Recreated, // a (replaced), b, c, a
		taskapi.Ready, taskapi.Ready, // c, a
	}
	if s := states(t, repo, db, "t"); !slices.Equal(s, want) {
		t.Fatalf("after revivals: %v, want %v", s, want)
	}
	moved, err := repo.ReassignAll(t.Context(), db, "t", taskapi.Failed, taskapi.Success, taskapi.Unbounded)
	if err != nil || moved != 0 {
		t.Fatalf("ReassignAll of no Failed task = %d, %v", moved, err)
	}
	complete(t, repo, db, "t", taskapi.Filter, poll(t, repo, db, "t", 1)...) // b
	err = repo.Reassign(t.Context(), db, "t", taskapi.Assignment{Task: pushed[1], Result: taskapi.Success},
		taskapi.Assignment{Task: pushed[1], Result: taskapi.Suspension})
	if err != nil || states(t, repo, db, "t")[1] != taskapi.Suspended {
		t.Fatalf("Reassign: %v, states %v", err, states(t, repo, db, "t"))
	}
	err = repo.Reassign(t.Context(), db, "t", taskapi.Assignment{Task: pushed[1]}, taskapi.Assignment{Task: revivals[0].Current})
	wantErr(t, err, taskapi.ErrStateMismatch)
	moved, err = repo.ReassignAll(t.Context(), db, "t", taskapi.Suspended, taskapi.Success, taskapi.Unbounded)
	if err != nil || moved != 1 {
		t.Fatalf("ReassignAll = %d, %v", moved, err)
	}
	info, _, _ = repo.Lookup(t.Context(), db, "t", pushed[1].Sequence)
	if info.State != taskapi.Succeeded || info.Descent != taskapi.Filtered { // Failed, Filtered, Suspended
		t.Fatalf("reassigned task = %+v", info)
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	suspended := func(id string) taskapi.Creation { return taskapi.Creation{Identifier: id, Suspended: true} }
	push(t, repo, db, "t", taskapi.Append, suspended("a"), suspended("b"), suspended("c"), taskapi.Creation{Identifier: "d"})
	got, err := repo.Join(t.Context(), db, "t", taskapi.Singular, []string{"a", "x"}, nil, []string{"b", "a"}, []string{"a", "c"})
	if err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("Join(singular) = %v, %v", got, err)
	}
	got, err = repo.Join(t.Context(), db, "t", taskapi.Eternal, []string{"c", "d"})
	if err != nil || !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("Join(eternal) = %v, %v", got, err)
	}
	if s := states(t, repo, db, "t"); slices.Contains(s, taskapi.Suspended) {
		t.Fatalf("states after Join: %v", s)
	}
	_, err = repo.Join(t.Context(), db, "t", taskapi.Singular, []string{""})
	wantErr(t, err, taskapi.ErrInvalidArgument)
}

func TestOwners(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	other := newRepo(t, db, "b")
	if created, err := other.Register(t.Context(), db); err != nil || created {
		t.Fatalf("second Register = %v, %v", created, err)
	}
	if names, err := repo.Owners(t.Context(), db, time.Hour); err != nil || !slices.Equal(names, []string{"b"}) {
		t.Fatalf("Owners = %v, %v", names, err)
	}
	push(t, repo, db, "t", taskapi.Append, ids("x", "y")...)
	poll(t, other, db, "t", 1)
	poll(t, repo, db, "t", 1)
	time.Sleep(20 * time.Millisecond)
	if n, err := other.PurgeOwners(t.Context(), db, time.Millisecond); err != nil || n != 0 {
		t.Fatalf("PurgeOwners of an owner with an Active task = %d, %v", n, err)
	}
	if n, err := other.Expire(t.Context(), db, time.Millisecond); err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	if n, err := other.PurgeOwners(t.Context(), db, time.Millisecond); err != nil || n != 1 {
		t.Fatalf("PurgeOwners = %d, %v", n, err)
	}
	wantErr(t, repo.Heartbeat(t.Context(), db), taskapi.ErrUnknownOwner)
	if err := other.Heartbeat(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if s := states(t, repo, db, "t"); !slices.Equal(s, []taskapi.State{taskapi.Active, taskapi.Expired}) {
		t.Fatalf("states: %v", s)
	}
	_, err := repo.Owners(t.Context(), db, -time.Second)
	wantErr(t, err, taskapi.ErrInvalidArgument)
}

func TestTopics(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "b", "a")
	if created, err := repo.Initialize(t.Context(), db, "a"); err != nil || created {
		t.Fatalf("Initialize again = %v, %v", created, err)
	}
	if names, err := repo.Topics(t.Context(), db); err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Topics = %v, %v", names, err)
	}
	push(t, repo, db, "a", taskapi.Append, ids("x", "y")...)
	if err := repo.PurgeAll(t.Context(), db, "a"); err != nil || len(states(t, repo, db, "a")) != 0 {
		t.Fatalf("PurgeAll: %v, states %v", err, states(t, repo, db, "a"))
	}
	if err := repo.PurgeAll(t.Context(), db, "nowhere"); err != nil {
		t.Fatalf("PurgeAll of an unknown topic: %v", err)
	}
	if existed, err := repo.Destroy(t.Context(), db, "a"); err != nil || !existed {
		t.Fatalf("Destroy = %v, %v", existed, err)
	}
	if existed, err := repo.Destroy(t.Context(), db, "a"); err != nil || existed {
		t.Fatalf("Destroy again = %v, %v", existed, err)
	}
	_, err := repo.Push(t.Context(), db, "a", taskapi.Append, ids("x")...)
	wantErr(t, err, taskapi.ErrUnknownTopic)
	tasks := push(t, repo, db, "b", taskapi.Append, ids("x", "y", "z")...)
	complete(t, repo, db, "b", taskapi.Success, poll(t, repo, db, "b", 2)...)
	if n, err := repo.Purge(t.Context(), db, "b", taskapi.Range{From: tasks[1].Sequence, To: taskapi.MaxSequence}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if n, err := repo.Purge(t.Context(), db, "b", taskapi.Unbounded, taskapi.Ready); err != nil || n != 1 {
		t.Fatalf("Purge(Ready) = %d, %v", n, err)
	}
	if err := repo.Refresh(t.Context(), db); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t", "u")
	before := time.Now()
	tasks := push(t, repo, db, "t", taskapi.Append,
		taskapi.Creation{Identifier: "a", Reference: "r"}, taskapi.Creation{Identifier: "b"},
		taskapi.Creation{Identifier: "a", Reference: "r"}, taskapi.Creation{Identifier: "a"})
	complete(t, repo, db, "t", taskapi.Success, poll(t, repo, db, "t", 1)...)

	infos, err := repo.Page(t.Context(), db, "t", taskapi.Listing{Identifier: "a"}, taskapi.MaxSequence, 2, taskapi.Backward)
	if err != nil || len(infos) != 2 || infos[0].Sequence != tasks[3].Sequence || infos[1].Sequence != tasks[2].Sequence {
		t.Fatalf("Page backward = %v, %v", infos, err)
	}
	infos, err = repo.Page(t.Context(), db, "t", taskapi.Listing{Reference: "r", States: []taskapi.State{taskapi.Ready}}, tasks[0].Sequence-1, 10, taskapi.Forward)
	if err != nil || len(infos) != 1 || infos[0].Sequence != tasks[2].Sequence {
		t.Fatalf("Page forward = %v, %v", infos, err)
	}
	if _, ok, err := repo.Lookup(t.Context(), db, "t", tasks[3].Sequence+1); ok || err != nil {
		t.Fatalf("Lookup of a missing task = %v, %v", ok, err)
	}

	counts, err := repo.Count(t.Context(), db, taskapi.Recent, taskapi.Counting{Reference: "r"}, taskapi.Unbounded)
	want := map[string]map[taskapi.State]taskapi.Summary{
		"t": {taskapi.Ready: {Count: 1, Bound: tasks[2].Sequence}},
		"u": {},
	}
	if err != nil || !maps.EqualFunc(counts, want, maps.Equal) {
		t.Fatalf("Count(recent) = %v, %v; want %v", counts, err, want)
	}
	counts, err = repo.Count(t.Context(), db, taskapi.Total, taskapi.Counting{Topic: "t", States: []taskapi.State{taskapi.Ready}}, taskapi.Unbounded)
	want = map[string]map[taskapi.State]taskapi.Summary{"t": {taskapi.Ready: {Count: 3, Bound: tasks[3].Sequence}}}
	if err != nil || !maps.EqualFunc(counts, want, maps.Equal) {
		t.Fatalf("Count(total) = %v, %v; want %v", counts, err, want)
	}

	results, err := repo.Results(t.Context(), db, before.Add(-time.Minute), time.Time{})
	if err != nil || len(results) != 2 || results["t"][taskapi.Success] != 1 || len(results["t"]) != 1 || results["u"] == nil {
		t.Fatalf("Results = %v, %v", results, err)
	}
	if results, _ := repo.Results(t.Context(), db, time.Time{}, before.Add(-time.Minute)); len(results["t"]) != 0 {
		t.Fatalf("Results before the push = %v", results)
	}

	if seq, err := repo.Resolve(t.Context(), db, before.Add(-time.Minute), false); err != nil || seq != tasks[0].Sequence {
		t.Fatalf("Resolve(following) = %d, %v", seq, err)
	}
	if seq, err := repo.Resolve(t.Context(), db, before.Add(-time.Minute), true); err != nil || seq != taskapi.Inception {
		t.Fatalf("Resolve(preceding) = %d, %v", seq, err)
	}
	if seq, err := repo.Resolve(t.Context(), db, time.Now().Add(time.Minute), true); err != nil || seq != tasks[3].Sequence {
		t.Fatalf("Resolve(preceding, later) = %d, %v", seq, err)
	}
}
