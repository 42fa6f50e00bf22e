package conformance

// The helpers of this file serve revive.go, reassign.go, join.go, owners.go,
// read.go, purge.go, input.go and atomicity.go. They hang off world, a thin
// wrapper around env, so that their names cannot clash with helpers that
// other files add to env.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// expirerName is the other owner that polls the tasks task(…, Expired) expires.
const expirerName = "owner-expirer"

// tick is a pause long enough for the database clock to move on, so that
// tasks pushed before and after it have different creation times even on a
// database that keeps milliseconds only.
const tick = 5 * time.Millisecond

// world is a case's env with the helpers below.
type world[Tx any] struct {
	*env[Tx]
	expirer taskapi.Repository[Tx] // polls the tasks that task(…, Expired) expires
}

// worldOf wraps the env that setup returned.
func worldOf[Tx any](e *env[Tx]) *world[Tx] { return &world[Tx]{env: e} }

// revivable lists the states a task can be revived or reassigned from.
var revivable = []taskapi.State{
	taskapi.Expired, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded,
}

// stateName turns a state into a case name such as "Expired".
func stateName(s taskapi.State) string {
	name := strings.ToLower(s.String())
	return strings.ToUpper(name[:1]) + name[1:]
}

// must fails the test when err is not nil.
func (w *world[Tx]) must(err error, format string, args ...any) {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// task pushes one task with identifier and input "in-"+identifier and brings
// it to state; see taskWith.
func (w *world[Tx]) task(topic, identifier string, state taskapi.State) taskapi.Task {
	w.t.Helper()
	return w.taskWith(topic, taskapi.Creation{Identifier: identifier, Input: "in-" + identifier}, state)
}

// taskWith appends one task made of c (never pushed suspended) and brings it
// to state, and returns it as Push returned it:
//   - Active: polled by Owner; the four completed states: polled by Owner and
//     completed with output "out-"+identifier (descent stays Ready);
//   - Expired: polled by the other owner expirerName, then Owner's Expire(0)
//     expires it (and any other Active task of another owner);
//   - Recreated: Failed, then revived with ReviveAppend (a new Ready task with
//     the same identifier follows it);
//   - Redundant: superseded by a new Ready task with the same identifier.
//
// Polls take the newest Ready task (LIFO), which is the one just pushed.
func (w *world[Tx]) taskWith(topic string, c taskapi.Creation, state taskapi.State) taskapi.Task {
	w.t.Helper()
	c.Suspended = false
	var task taskapi.Task
	switch state {
	case taskapi.Recreated:
		task = w.taskWith(topic, c, taskapi.Failed)
		w.reviveTasks(topic, taskapi.ReviveAppend, task)
	case taskapi.Redundant:
		task = w.push(topic, taskapi.Append, c)[0]
		w.push(topic, taskapi.Supersede, c)
	default:
		task = w.push(topic, taskapi.Append, c)[0]
	}
	switch state {
	case taskapi.Ready, taskapi.Recreated, taskapi.Redundant:
	case taskapi.Expired:
		w.pollExactly(w.expiring(), topic, task)
		time.Sleep(tick)
		_, err := w.repo.Expire(w.ctx, w.db, 0)
		w.must(err, "Expire(0)")
	case taskapi.Active, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded:
		w.pollExactly(w.repo, topic, task)
		if result, ok := state.Result(); ok {
			err := w.repo.Complete(w.ctx, w.db, topic, taskapi.Completion{
				Task: task, Decision: taskapi.Decision{Result: result, Output: "out-" + c.Identifier},
			})
			w.must(err, "Complete(%q, %d, %v)", topic, task.Sequence, result)
		}
	default:
		w.t.Fatalf("taskWith: cannot bring a task to %v", state)
	}
	if got := w.info(topic, task.Sequence).State; got != state {
		w.t.Fatalf("taskWith: task %d of %q is %v, want %v", task.Sequence, topic, got, state)
	}
	return task
}

// suspended pushes one Suspended task per identifier, with input "in-"+identifier.
func (w *world[Tx]) suspended(topic string, identifiers ...string) []taskapi.Task {
	w.t.Helper()
	creations := make([]taskapi.Creation, len(identifiers))
	for i, id := range identifiers {
		creations[i] = taskapi.Creation{Identifier: id, Input: "in-" + id, Suspended: true}
	}
	return w.push(topic, taskapi.Append, creations...)
}

// expiring returns the registered other owner that task(…, Expired) polls with.
func (w *world[Tx]) expiring() taskapi.Repository[Tx] {
	w.t.Helper()
	if w.expirer == nil {
		w.expirer = w.owner(expirerName)
	}
	return w.expirer
}

// pollExactly polls one task LIFO with repo and fails unless it is task.
func (w *world[Tx]) pollExactly(repo taskapi.Repository[Tx], topic string, task taskapi.Task) {
	w.t.Helper()
	polled, err := repo.Poll(w.ctx, w.db, topic, 1, taskapi.LIFO)
	w.must(err, "Poll(%q) by %q", topic, repo.Owner())
	if len(polled) != 1 || polled[0].Sequence != task.Sequence {
		w.t.Fatalf("Poll(%q) by %q = %v, want task %d", topic, repo.Owner(), polled, task.Sequence)
	}
}

// revive calls Revive and fails the test on error.
func (w *world[Tx]) revive(topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, size int) []taskapi.Revival {
	w.t.Helper()
	revivals, err := w.repo.Revive(w.ctx, w.db, topic, how, state, span, size)
	w.must(err, "Revive(%q, %v, %v, %v, %d)", topic, how, state, span, size)
	return revivals
}

// reviveTasks calls ReviveTasks and fails the test on error.
func (w *world[Tx]) reviveTasks(topic string, how taskapi.Revivification, tasks ...taskapi.Task) []taskapi.Revival {
	w.t.Helper()
	revivals, err := w.repo.ReviveTasks(w.ctx, w.db, topic, how, tasks...)
	w.must(err, "ReviveTasks(%q, %v, %v)", topic, how, tasks)
	return revivals
}

// reassign calls Reassign and fails the test on error.
func (w *world[Tx]) reassign(topic string, assignments ...taskapi.Assignment) {
	w.t.Helper()
	w.must(w.repo.Reassign(w.ctx, w.db, topic, assignments...), "Reassign(%q, %v)", topic, assignments)
}

// want fails the test unless the task is in state with descent; it returns
// what Lookup found.
func (w *world[Tx]) want(topic string, sequence int64, state, descent taskapi.State) taskapi.Info {
	w.t.Helper()
	info := w.info(topic, sequence)
	if info.State != state || info.Descent != descent {
		w.t.Errorf("task %d of %q is %v (descent %v), want %v (descent %v)",
			sequence, topic, info.State, info.Descent, state, descent)
	}
	return info
}

// missing fails the test unless topic has no task with sequence.
func (w *world[Tx]) missing(topic string, sequence int64) {
	w.t.Helper()
	info, ok, err := w.repo.Lookup(w.ctx, w.db, topic, sequence)
	w.must(err, "Lookup(%q, %d)", topic, sequence)
	if ok {
		w.t.Errorf("Lookup(%q, %d) found %+v, want nothing", topic, sequence, info)
	}
}

// snapshot returns every task of each topic, in ascending order.
func (w *world[Tx]) snapshot(topics ...string) map[string][]taskapi.Info {
	w.t.Helper()
	all := make(map[string][]taskapi.Info, len(topics))
	for _, topic := range topics {
		all[topic] = w.all(topic)
	}
	return all
}

// unchanged fails the test unless every topic of before holds exactly the
// tasks it held then, except those with the given sequences, which are ignored.
func (w *world[Tx]) unchanged(before map[string][]taskapi.Info, except ...int64) bool {
	w.t.Helper()
	same := true
	for _, topic := range slices.Sorted(maps.Keys(before)) {
		skip := func(info taskapi.Info) bool { return slices.Contains(except, info.Sequence) }
		got := slices.DeleteFunc(w.all(topic), skip)
		want := slices.DeleteFunc(slices.Clone(before[topic]), skip)
		if diff := diffInfos(got, want); diff != "" {
			w.t.Errorf("topic %q changed: %s", topic, diff)
			same = false
		}
	}
	return same
}

// sameInfo reports whether two Infos describe the same stored task.
func sameInfo(a, b taskapi.Info) bool {
	return a.Task == b.Task && a.State == b.State && a.Descent == b.Descent &&
		a.Owner == b.Owner && a.Reference == b.Reference && a.Output == b.Output &&
		a.Created.Equal(b.Created) && a.Completed.Equal(b.Completed)
}

// diffInfos describes the first difference between got and want, or returns "".
func diffInfos(got, want []taskapi.Info) string { return diffInfosBy(got, want, sameInfo) }

// diffInfosBy describes the first difference between got and want, comparing
// tasks with same, or returns "".
func diffInfosBy(got, want []taskapi.Info, same func(a, b taskapi.Info) bool) string {
	if len(got) != len(want) {
		return fmt.Sprintf("holds %s, want %s", describe(got), describe(want))
	}
	for i := range got {
		if !same(got[i], want[i]) {
			return fmt.Sprintf("task %d is %+v, want %+v", want[i].Sequence, got[i], want[i])
		}
	}
	return ""
}

// describe lists infos as sequence:STATE pairs.
func describe(infos []taskapi.Info) string {
	parts := make([]string, len(infos))
	for i, info := range infos {
		parts[i] = fmt.Sprintf("%d:%v", info.Sequence, info.State)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// infoSequences returns the sequences of infos, in order.
func infoSequences(infos []taskapi.Info) []int64 {
	seqs := make([]int64, len(infos))
	for i, info := range infos {
		seqs[i] = info.Sequence
	}
	return seqs
}

// seqsOf returns the sequences of the given tasks, in order.
func seqsOf(tasks ...taskapi.Task) []int64 { return sequences(tasks) }

// wantSeqs fails the test unless got equals want; what names the call.
func wantSeqs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// page calls Page on the pool and returns the sequences; fails on error.
func (w *world[Tx]) page(topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) []int64 {
	w.t.Helper()
	infos, err := w.repo.Page(w.ctx, w.db, topic, listing, cursor, size, direction)
	w.must(err, "Page(%q, %+v, %d, %d, %v)", topic, listing, cursor, size, direction)
	return infoSequences(infos)
}

// topics returns the registered topics; fails on error.
func (w *world[Tx]) topics() []string {
	w.t.Helper()
	topics, err := w.repo.Topics(w.ctx, w.db)
	w.must(err, "Topics")
	return topics
}

// wantTopics fails the test unless the registered topics are exactly want.
func (w *world[Tx]) wantTopics(want ...string) {
	w.t.Helper()
	if got := w.topics(); !slices.Equal(got, want) {
		w.t.Errorf("Topics = %q, want %q", got, want)
	}
}

// others returns Owner's view of the other owners within d; fails on error.
func (w *world[Tx]) others(d time.Duration) []string {
	w.t.Helper()
	owners, err := w.repo.Owners(w.ctx, w.db, d)
	w.must(err, "Owners(%v)", d)
	return owners
}

// wantStrings fails the test unless got equals want (nil equals empty).
func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// wantCount fails the test unless the result of Count or Results lists
// exactly the topics of want, each with exactly want's entries.
func wantCount[K comparable, V comparable](t *testing.T, what string, got, want map[string]map[K]V) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil map, want %v", what, want)
		return
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// count calls Count and fails on error.
func (w *world[Tx]) count(snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) map[string]map[taskapi.State]taskapi.Summary {
	w.t.Helper()
	counts, err := w.repo.Count(w.ctx, w.db, snapshot, filter, span)
	w.must(err, "Count(%v, %+v, %v)", snapshot, filter, span)
	return counts
}

// results calls Results and fails on error.
func (w *world[Tx]) results(from, to time.Time) map[string]map[taskapi.Result]int64 {
	w.t.Helper()
	results, err := w.repo.Results(w.ctx, w.db, from, to)
	w.must(err, "Results(%v, %v)", from, to)
	return results
}

// resolve calls Resolve and fails on error.
func (w *world[Tx]) resolve(at time.Time, preceding bool) int64 {
	w.t.Helper()
	seq, err := w.repo.Resolve(w.ctx, w.db, at, preceding)
	w.must(err, "Resolve(%v, %v)", at, preceding)
	return seq
}

// purge calls Purge and fails on error.
func (w *world[Tx]) purge(topic string, span taskapi.Range, states ...taskapi.State) int64 {
	w.t.Helper()
	n, err := w.repo.Purge(w.ctx, w.db, topic, span, states...)
	w.must(err, "Purge(%q, %v, %v)", topic, span, states)
	return n
}

// wantN fails the test unless a returned count got equals want.
func wantN(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// begin starts a caller transaction on the pool. The returned end commits
// (true) or rolls back (false) and fails the test on error; a transaction not
// ended by the case is rolled back at cleanup.
func (w *world[Tx]) begin() (Tx, func(commit bool)) {
	w.t.Helper()
	tx, end, err := w.b.Begin(w.ctx, w.db)
	w.must(err, "Begin")
	done := false
	w.t.Cleanup(func() {
		if !done {
			_ = end(false)
		}
	})
	return tx, func(commit bool) {
		w.t.Helper()
		done = true
		w.must(end(commit), "ending the transaction (commit %v)", commit)
	}
}

// pushOn pushes on the handle h and fails on error.
func (w *world[Tx]) pushOn(h Tx, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) []taskapi.Task {
	w.t.Helper()
	tasks, err := w.repo.Push(w.ctx, h, topic, insertion, creations...)
	w.must(err, "Push(%q, %v) on the transaction", topic, insertion)
	return tasks
}

// stateOn returns the state of a task seen through the handle h.
func (w *world[Tx]) stateOn(h Tx, topic string, sequence int64) taskapi.State {
	w.t.Helper()
	info, ok, err := w.repo.Lookup(w.ctx, h, topic, sequence)
	w.must(err, "Lookup(%q, %d) on the transaction", topic, sequence)
	if !ok {
		w.t.Fatalf("Lookup(%q, %d) on the transaction found nothing", topic, sequence)
	}
	return info.State
}

// countOn returns how many tasks topic holds, seen through the handle h.
func (w *world[Tx]) countOn(h Tx, topic string) int {
	w.t.Helper()
	infos, err := w.repo.Page(w.ctx, h, topic, taskapi.Listing{}, taskapi.Inception, 1<<20, taskapi.Forward)
	w.must(err, "Page(%q) on the transaction", topic)
	return len(infos)
}

// rejected checks a call that must fail with target: it reports a wrong
// error, then checks that topic still holds exactly *before and that the
// registered topics are still topics, and that a valid push still works.
// It leaves the current tasks of topic in *before, so that one mistake does
// not cascade into the checks that follow.
func (w *world[Tx]) rejected(label string, err, target error, topic string, topics []string, before *[]taskapi.Info) {
	w.t.Helper()
	if !errors.Is(err, target) {
		w.t.Errorf("%s: error = %v, want %v", label, err, target)
	}
	if diff := diffInfos(w.all(topic), *before); diff != "" {
		w.t.Errorf("%s: topic %q changed: %s", label, topic, diff)
	}
	if got := w.topics(); !slices.Equal(got, topics) {
		w.t.Errorf("%s: Topics = %q, want %q", label, got, topics)
	}
	pushed, perr := w.repo.Push(w.ctx, w.db, topic, taskapi.Append, taskapi.Creation{Identifier: "probe", Input: label})
	if perr != nil || len(pushed) != 1 {
		w.t.Errorf("%s: a valid push afterwards = %v, %v", label, pushed, perr)
	} else if info := w.info(topic, pushed[0].Sequence); info.State != taskapi.Ready || info.Input != label {
		w.t.Errorf("%s: the valid push afterwards stored %+v", label, info)
	}
	*before = w.all(topic)
}
