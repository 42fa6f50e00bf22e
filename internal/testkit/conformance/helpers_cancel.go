package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// This file holds the stage of the cancellation cases: a database in which
// every call of the repository has real work to do, the calls themselves,
// and what they could change.

// The topics of the stage: stageTopic holds a task in each state that a
// call acts on, stageDoomed one that Destroy and PurgeAll would remove,
// stageLed is led by Owner, and stageFree was never led.
const (
	stageTopic  = "t"
	stageDoomed = "doomed"
	stageLed    = "led"
	stageFree   = "free"
	// stageIdle is an owner that holds no task: PurgeOwners would delete it.
	stageIdle = "owner-idle"
	// stageSchedule is the schedule of stageTopic that Advance would start.
	stageSchedule = "s"
)

// stage is a world in which every call has something to do.
type stage[Tx any] struct {
	*world[Tx]
	ready, active, failed taskapi.Task
	newcomer              taskapi.Repository[Tx] // never registered
	activator             taskapi.Activator[Tx]  // nil unless the repository is one
	leader                taskapi.Leader[Tx]     // nil unless the repository is one
	observer              taskapi.Leader[Tx]     // reads the term of stageLed; nil with leader
	term                  taskapi.Term           // Owner's term of stageLed
}

// stageCall is one call of the repository, with arguments that make it
// reach the database and, for a write, change what it stores.
type stageCall[Tx any] struct {
	name string
	run  func(ctx context.Context, db Tx) error
}

// stageSetup opens a fresh database and sets the stage: in stageTopic a
// Ready, an Active, a Failed and a Suspended task, and an Active task of
// another owner that has fallen silent; a Failed task in stageDoomed; an
// idle owner; and, where the repository leads, Owner's term of stageLed and
// a Ready task there.
func stageSetup[Tx any](t *testing.T, b Backend[Tx]) *stage[Tx] {
	t.Helper()
	s := &stage[Tx]{world: worldOf(setup(t, b, stageTopic, stageDoomed, stageLed, stageFree))}
	s.ready = s.task(stageTopic, "r", taskapi.Ready)
	s.active = s.task(stageTopic, "a", taskapi.Active)
	s.failed = s.task(stageTopic, "f", taskapi.Failed)
	s.suspended(stageTopic, "s")
	s.pollExactly(s.expiring(), stageTopic, s.pushIDs(stageTopic, "theirs")[0])
	s.task(stageDoomed, "d", taskapi.Failed)
	s.owner(stageIdle)
	newcomer, err := b.New("owner-new")
	s.must(err, "New(owner-new)")
	s.newcomer = newcomer
	s.activator, _ = s.repo.(taskapi.Activator[Tx])
	if leader, ok := s.repo.(taskapi.Leader[Tx]); ok {
		s.leader = leader
		observer, err := b.New("owner-observer")
		s.must(err, "New(owner-observer)")
		s.observer = extension[taskapi.Leader[Tx]](s.t, observer)
		term, ok, err := leader.Lead(s.ctx, s.db, stageLed, time.Hour)
		s.must(err, "Lead(%q)", stageLed)
		if !ok {
			s.t.Fatalf("Lead(%q) refused", stageLed)
		}
		s.term = term
		s.task(stageLed, "l", taskapi.Ready) // for a poll under the term
	}
	time.Sleep(tick) // the other owners fall silent: Expire(0) and PurgeOwners(0) have work
	return s
}

// calls returns every call of the repository, and of the optional
// interfaces it implements, with real arguments.
func (s *stage[Tx]) calls() []stageCall[Tx] {
	calls := append(s.taskCalls(), s.adminCalls()...)
	calls = append(calls, s.readCalls()...)
	return append(calls, s.fleetCalls()...)
}

// taskCalls are the calls that change tasks.
func (s *stage[Tx]) taskCalls() []stageCall[Tx] {
	r, ready, active, failed := s.repo, s.ready, s.active, s.failed
	return []stageCall[Tx]{
		{"Push", func(ctx context.Context, db Tx) error {
			_, err := r.Push(ctx, db, stageTopic, taskapi.Append, taskapi.Creation{Identifier: "new"})
			return err
		}},
		{"Poll", func(ctx context.Context, db Tx) error { _, err := r.Poll(ctx, db, stageTopic, 10); return err }},
		{"PollOne", func(ctx context.Context, db Tx) error {
			_, _, err := taskapi.PollOne[Tx](ctx, r, db, stageTopic)
			return err
		}},
		{"Complete", func(ctx context.Context, db Tx) error {
			return r.Complete(ctx, db, stageTopic, ppcDone(active, taskapi.Success, "done"))
		}},
		{"Release", func(ctx context.Context, db Tx) error { return r.Release(ctx, db, stageTopic, active) }},
		{"Revive", func(ctx context.Context, db Tx) error {
			_, err := r.Revive(ctx, db, stageTopic, taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 10)
			return err
		}},
		{"ReviveTasks", func(ctx context.Context, db Tx) error {
			_, err := r.ReviveTasks(ctx, db, stageTopic, taskapi.ReviveAppend, failed)
			return err
		}},
		{"Join", func(ctx context.Context, db Tx) error {
			_, err := r.Join(ctx, db, stageTopic, taskapi.Singular, []string{"s"})
			return err
		}},
		{"Reassign", func(ctx context.Context, db Tx) error {
			return r.Reassign(ctx, db, stageTopic, taskapi.Assignment{Task: failed, Result: taskapi.Success})
		}},
		{"ReassignAll", func(ctx context.Context, db Tx) error {
			_, err := r.ReassignAll(ctx, db, stageTopic, taskapi.Failed, taskapi.Success, taskapi.Unbounded)
			return err
		}},
		{"Defer", func(ctx context.Context, db Tx) error {
			return r.Defer(ctx, db, stageTopic, time.Now().Add(time.Hour), ready)
		}},
		{"Purge", func(ctx context.Context, db Tx) error {
			_, err := r.Purge(ctx, db, stageTopic, taskapi.Unbounded)
			return err
		}},
		{"PurgeBefore", func(ctx context.Context, db Tx) error {
			_, err := taskapi.PurgeBefore[Tx](ctx, r, db, stageTopic, time.Now().Add(time.Hour))
			return err
		}},
		{"PurgeAll", func(ctx context.Context, db Tx) error { return r.PurgeAll(ctx, db, stageDoomed) }},
	}
}

// adminCalls are the calls that change owners, topics and schedules.
func (s *stage[Tx]) adminCalls() []stageCall[Tx] {
	r, newcomer := s.repo, s.newcomer
	return []stageCall[Tx]{
		{"Register", func(ctx context.Context, db Tx) error { _, err := newcomer.Register(ctx, db); return err }},
		{"Heartbeat", func(ctx context.Context, db Tx) error { return r.Heartbeat(ctx, db) }},
		{"Expire", func(ctx context.Context, db Tx) error { _, err := r.Expire(ctx, db, 0); return err }},
		{"PurgeOwners", func(ctx context.Context, db Tx) error { _, err := r.PurgeOwners(ctx, db, 0); return err }},
		{"Initialize", func(ctx context.Context, db Tx) error { _, err := r.Initialize(ctx, db, "fresh"); return err }},
		{"Destroy", func(ctx context.Context, db Tx) error { _, err := r.Destroy(ctx, db, stageDoomed); return err }},
		{"Refresh", func(ctx context.Context, db Tx) error { return r.Refresh(ctx, db) }},
		{"Advance", func(ctx context.Context, db Tx) error {
			_, err := r.Advance(ctx, db, stageTopic, stageSchedule, time.Time{}, time.Now())
			return err
		}},
	}
}

// readCalls are the calls that only read.
func (s *stage[Tx]) readCalls() []stageCall[Tx] {
	r, ready := s.repo, s.ready
	return []stageCall[Tx]{
		{"Owners", func(ctx context.Context, db Tx) error { _, err := r.Owners(ctx, db, time.Hour); return err }},
		{"Topics", func(ctx context.Context, db Tx) error { _, err := r.Topics(ctx, db); return err }},
		{"Page", func(ctx context.Context, db Tx) error {
			_, err := r.Page(ctx, db, stageTopic, taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
			return err
		}},
		{"PageAt", func(ctx context.Context, db Tx) error {
			_, err := taskapi.PageAt[Tx](ctx, r, db, stageTopic, taskapi.Listing{}, time.Now().Add(-time.Hour), 10, taskapi.Forward)
			return err
		}},
		{"Lookup", func(ctx context.Context, db Tx) error {
			_, _, err := r.Lookup(ctx, db, stageTopic, ready.Sequence)
			return err
		}},
		{"Count", func(ctx context.Context, db Tx) error {
			_, err := r.Count(ctx, db, taskapi.Recent, taskapi.Counting{}, taskapi.Unbounded)
			return err
		}},
		{"Results", func(ctx context.Context, db Tx) error {
			_, err := r.Results(ctx, db, time.Time{}, time.Time{})
			return err
		}},
		{"Resolve", func(ctx context.Context, db Tx) error { _, err := r.Resolve(ctx, db, time.Now(), true); return err }},
		{"NextDue", func(ctx context.Context, db Tx) error { _, err := r.NextDue(ctx, db, stageTopic); return err }},
		{"Mark", func(ctx context.Context, db Tx) error {
			_, err := r.Mark(ctx, db, stageTopic, stageSchedule)
			return err
		}},
	}
}

// fleetCalls are the calls of taskapi.Activator and taskapi.Leader, where
// the repository implements them, and a poll under a term. Hold reads the
// term and, inside a transaction, holds it until the transaction ends.
func (s *stage[Tx]) fleetCalls() []stageCall[Tx] {
	var calls []stageCall[Tx]
	if a := s.activator; a != nil {
		calls = append(calls,
			stageCall[Tx]{"SetActivation", func(ctx context.Context, db Tx) error {
				return a.SetActivation(ctx, db, stageTopic, taskapi.Paused)
			}},
			stageCall[Tx]{"Activations", func(ctx context.Context, db Tx) error { _, err := a.Activations(ctx, db); return err }})
	}
	if l, term := s.leader, s.term; l != nil {
		calls = append(calls,
			stageCall[Tx]{"Lead", func(ctx context.Context, db Tx) error { _, _, err := l.Lead(ctx, db, stageFree, time.Hour); return err }},
			stageCall[Tx]{"Renew", func(ctx context.Context, db Tx) error { _, _, err := l.Renew(ctx, db, term, 2*time.Hour); return err }},
			stageCall[Tx]{"Concede", func(ctx context.Context, db Tx) error { return l.Concede(ctx, db, term) }},
			stageCall[Tx]{"Hold", func(ctx context.Context, db Tx) error { _, err := l.Hold(ctx, db, term); return err }},
			stageCall[Tx]{"PollUnderATerm", func(ctx context.Context, db Tx) error {
				_, err := s.repo.Poll(ctx, db, stageLed, 10, term)
				return err
			}})
	}
	return calls
}

// stageState is what the calls could change: the registered topics, every
// task of them, the other owners, the activations, the mark of
// stageSchedule and the term of stageLed.
type stageState struct {
	topics      []string
	tasks       map[string][]taskapi.Info
	owners      []string
	activations map[string]taskapi.Activation
	mark        time.Time
	term        taskapi.Term
}

// capture reads the stage's state on the pool.
func (s *stage[Tx]) capture() stageState {
	s.t.Helper()
	st := stageState{topics: s.topics(), owners: s.others(time.Hour)}
	st.tasks = s.snapshot(append(slices.Clone(st.topics), stageDoomed, "fresh")...)
	var err error
	st.mark, err = s.repo.Mark(s.ctx, s.db, stageTopic, stageSchedule)
	s.must(err, "Mark")
	if s.activator != nil {
		st.activations, err = s.activator.Activations(s.ctx, s.db)
		s.must(err, "Activations")
	}
	if s.observer != nil {
		// Refused while Owner leads: the observer only reads the term.
		st.term, _, err = s.observer.Lead(s.ctx, s.db, stageLed, time.Minute)
		s.must(err, "Lead(%q) by an observer", stageLed)
	}
	return st
}

// wantSame fails the test unless the state is as before, apart from the
// tasks with the given sequences; label names what came in between.
func (s *stage[Tx]) wantSame(label string, before stageState, except ...int64) {
	s.t.Helper()
	now := s.capture()
	for _, diff := range before.diff(now, except) {
		s.t.Errorf("after %s: %s", label, diff)
	}
}

// diff describes how after differs from st, ignoring the tasks with the
// given sequences.
func (st stageState) diff(after stageState, except []int64) []string {
	var diffs []string
	if !slices.Equal(after.topics, st.topics) {
		diffs = append(diffs, fmt.Sprintf("Topics = %q, was %q", after.topics, st.topics))
	}
	if !slices.Equal(after.owners, st.owners) {
		diffs = append(diffs, fmt.Sprintf("Owners = %q, was %q", after.owners, st.owners))
	}
	if !maps.Equal(after.activations, st.activations) {
		diffs = append(diffs, fmt.Sprintf("Activations = %v, was %v", after.activations, st.activations))
	}
	if !after.mark.Equal(st.mark) {
		diffs = append(diffs, fmt.Sprintf("the mark of %q is %v, was %v", stageSchedule, after.mark, st.mark))
	}
	if !sameTerm(after.term, st.term) {
		diffs = append(diffs, fmt.Sprintf("the term of %q is %s, was %s", stageLed, termString(after.term), termString(st.term)))
	}
	skip := func(info taskapi.Info) bool { return slices.Contains(except, info.Sequence) }
	for _, topic := range slices.Sorted(maps.Keys(st.tasks)) {
		got := slices.DeleteFunc(slices.Clone(after.tasks[topic]), skip)
		want := slices.DeleteFunc(slices.Clone(st.tasks[topic]), skip)
		if diff := diffInfosBy(got, want, ppcSameInfo); diff != "" {
			diffs = append(diffs, fmt.Sprintf("topic %q %s", topic, diff))
		}
	}
	return diffs
}

// wantNeverLed fails the test unless nobody has led stageFree: the
// observer, leading it now, gets its first term.
func (s *stage[Tx]) wantNeverLed() {
	s.t.Helper()
	if s.observer == nil {
		return
	}
	term, ok, err := s.observer.Lead(s.ctx, s.db, stageFree, time.Minute)
	s.must(err, "Lead(%q) by an observer", stageFree)
	if !ok || term.Number != 1 {
		s.t.Errorf("Lead(%q) by an observer = %s, %v; want the first term: nobody led it before", stageFree, termString(term), ok)
	}
}
