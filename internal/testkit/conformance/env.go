package conformance

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Owner is the name of the repository every case starts with.
const Owner = "owner-a"

// env is one case's world: a fresh database and a registered repository.
type env[Tx any] struct {
	t    *testing.T
	ctx  context.Context
	b    Backend[Tx]
	db   Tx
	repo taskapi.Repository[Tx]
}

// cases runs each case as a parallel subtest.
func cases(t *testing.T, all map[string]func(t *testing.T)) {
	t.Helper()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			all[name](t)
		})
	}
}

// setup opens a fresh database, registers Owner and initializes topics.
func setup[Tx any](t *testing.T, b Backend[Tx], topics ...string) *env[Tx] {
	t.Helper()
	e := &env[Tx]{t: t, ctx: t.Context(), b: b, db: b.Open(t)}
	e.repo = e.owner(Owner)
	for _, topic := range topics {
		if _, err := e.repo.Initialize(e.ctx, e.db, topic); err != nil {
			t.Fatalf("Initialize(%q): %v", topic, err)
		}
	}
	return e
}

// owner returns a registered repository for name on the same database.
func (e *env[Tx]) owner(name string) taskapi.Repository[Tx] {
	e.t.Helper()
	repo, err := e.b.New(name)
	if err != nil {
		e.t.Fatalf("New(%q): %v", name, err)
	}
	if _, err := repo.Register(e.ctx, e.db); err != nil {
		e.t.Fatalf("Register(%q): %v", name, err)
	}
	return repo
}

// push pushes creations and fails the test on error.
func (e *env[Tx]) push(topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) []taskapi.Task {
	e.t.Helper()
	tasks, err := e.repo.Push(e.ctx, e.db, topic, insertion, creations...)
	if err != nil {
		e.t.Fatalf("Push(%q, %v): %v", topic, insertion, err)
	}
	return tasks
}

// pushIDs appends one Ready task per identifier, with the identifier as input.
func (e *env[Tx]) pushIDs(topic string, identifiers ...string) []taskapi.Task {
	e.t.Helper()
	creations := make([]taskapi.Creation, len(identifiers))
	for i, id := range identifiers {
		creations[i] = taskapi.Creation{Identifier: id, Input: "in-" + id}
	}
	return e.push(topic, taskapi.Append, creations...)
}

// poll polls with Owner's repository and fails the test on error.
func (e *env[Tx]) poll(topic string, size int, opts ...taskapi.PollOption) []taskapi.Task {
	e.t.Helper()
	tasks, err := e.repo.Poll(e.ctx, e.db, topic, size, opts...)
	if err != nil {
		e.t.Fatalf("Poll(%q, %d, %v): %v", topic, size, opts, err)
	}
	return tasks
}

// complete completes tasks with one result and fails the test on error.
func (e *env[Tx]) complete(topic string, result taskapi.Result, tasks ...taskapi.Task) {
	e.t.Helper()
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: result}}
	}
	if err := e.repo.Complete(e.ctx, e.db, topic, completions...); err != nil {
		e.t.Fatalf("Complete(%q, %v): %v", topic, result, err)
	}
}

// info looks a task up and fails the test when it is missing.
func (e *env[Tx]) info(topic string, sequence int64) taskapi.Info {
	e.t.Helper()
	info, ok, err := e.repo.Lookup(e.ctx, e.db, topic, sequence)
	if err != nil || !ok {
		e.t.Fatalf("Lookup(%q, %d) = %v, %v", topic, sequence, ok, err)
	}
	return info
}

// all pages through every task of topic in ascending order.
func (e *env[Tx]) all(topic string) []taskapi.Info {
	e.t.Helper()
	infos, err := e.repo.Page(e.ctx, e.db, topic, taskapi.Listing{}, taskapi.Inception, 1<<20, taskapi.Forward)
	if err != nil {
		e.t.Fatalf("Page(%q): %v", topic, err)
	}
	return infos
}

// states returns the state of every task of topic by sequence.
func (e *env[Tx]) states(topic string) map[int64]taskapi.State {
	e.t.Helper()
	states := map[int64]taskapi.State{}
	for _, info := range e.all(topic) {
		states[info.Sequence] = info.State
	}
	return states
}

// wantState fails the test unless the task with sequence is in state.
func (e *env[Tx]) wantState(topic string, sequence int64, state taskapi.State) {
	e.t.Helper()
	if got := e.info(topic, sequence).State; got != state {
		e.t.Errorf("task %d of %q is %v, want %v", sequence, topic, got, state)
	}
}

// extension returns repo as I, an interface of taskapi beside Repository
// (a Capacitor, a Clock, ...) that every backend implements, or fails t.
func extension[I any](t *testing.T, repo any) I {
	t.Helper()
	x, ok := repo.(I)
	if !ok {
		t.Fatalf("%T does not implement %v", repo, reflect.TypeFor[I]())
	}
	return x
}

// wantErr fails the test unless err wraps target.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// sequences returns the sequences of tasks, in order.
func sequences(tasks []taskapi.Task) []int64 {
	seqs := make([]int64, len(tasks))
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}
