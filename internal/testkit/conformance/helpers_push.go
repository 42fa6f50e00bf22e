package conformance

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// This file holds the helpers of the push, poll and complete cases. They hang
// off ppcEnv, a wrapper of env, so that they cannot collide with helpers that
// other files of the package add to env.

// ppcOther is the name of the second owner that the push, poll and complete
// cases use for tasks held by somebody else.
const ppcOther = "owner-b"

// ppcSilence is how long a case waits before it expires the tasks of the
// second owner with Expire(ctx, db, 0): long enough for the owner's heartbeat
// to be strictly older than the database clock.
const ppcSilence = 20 * time.Millisecond

// ppcClockSlack bounds how far the database clock may be from the test's own
// clock; a time zone mix-up is at least half an hour off.
const ppcClockSlack = 10 * time.Minute

// ppcEnv is env with the helpers of the push, poll and complete cases.
type ppcEnv[Tx any] struct {
	*env[Tx]
	second taskapi.Repository[Tx]
}

// ppcSetup opens a fresh database like setup and wraps it.
func ppcSetup[Tx any](t *testing.T, b Backend[Tx], topics ...string) *ppcEnv[Tx] {
	t.Helper()
	return &ppcEnv[Tx]{env: setup(t, b, topics...)}
}

// other returns the registered repository of the second owner, ppcOther.
func (p *ppcEnv[Tx]) other() taskapi.Repository[Tx] {
	p.t.Helper()
	if p.second == nil {
		p.second = p.owner(ppcOther)
	}
	return p.second
}

// unregistered returns a repository whose owner never registered.
func (p *ppcEnv[Tx]) unregistered(name string) taskapi.Repository[Tx] {
	p.t.Helper()
	repo, err := p.b.New(name)
	if err != nil {
		p.t.Fatalf("New(%q): %v", name, err)
	}
	return repo
}

// takeNewest polls one task of topic with repo in LIFO order and fails the
// test unless it is want (the task pushed last).
func (p *ppcEnv[Tx]) takeNewest(repo taskapi.Repository[Tx], topic string, want taskapi.Task) {
	p.t.Helper()
	got, err := repo.Poll(p.ctx, p.db, topic, 1, taskapi.LIFO)
	if err != nil {
		p.t.Fatalf("setup: Poll(%q) by %s: %v", topic, repo.Owner(), err)
	}
	if len(got) != 1 || got[0] != want {
		p.t.Fatalf("setup: Poll(%q, 1, LIFO) by %s = %v, want [%v]", topic, repo.Owner(), got, want)
	}
}

// expireOther lets the second owner fall silent and expires its Active tasks
// from Owner's repository; it fails the test when none was expired.
func (p *ppcEnv[Tx]) expireOther() int64 {
	p.t.Helper()
	time.Sleep(ppcSilence)
	n, err := p.repo.Expire(p.ctx, p.db, 0)
	if err != nil {
		p.t.Fatalf("setup: Expire(0): %v", err)
	}
	if n < 1 {
		p.t.Fatalf("setup: Expire(0) = %d, want at least 1", n)
	}
	return n
}

// inState pushes one task of topic with identifier id and brings it into
// state: Active (polled by Owner), Expired (polled by the second owner, who
// then falls silent), a completed state (polled and completed by Owner),
// Recreated (completed, then revived with ReviveAppend, which pushes a new
// Ready task), Redundant (replaced by a newer Ready task with a Replace push,
// which also makes every other task of id in 1..6 Redundant, so make
// Redundant tasks first) or Ready. It fails the test when the task does not
// end up in state.
func (p *ppcEnv[Tx]) inState(topic, id string, state taskapi.State) taskapi.Task {
	p.t.Helper()
	input := "in-" + id + "-" + strings.ToLower(state.String())
	task := p.push(topic, taskapi.Append, taskapi.Creation{Identifier: id, Input: input})[0]
	switch state {
	case taskapi.Ready:
	case taskapi.Active:
		p.takeNewest(p.repo, topic, task)
	case taskapi.Expired:
		p.takeNewest(p.other(), topic, task)
		p.expireOther()
	case taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded:
		p.takeNewest(p.repo, topic, task)
		result, _ := state.Result()
		p.complete(topic, result, task)
	case taskapi.Recreated:
		p.takeNewest(p.repo, topic, task)
		p.complete(topic, taskapi.Success, task)
		if _, err := p.repo.ReviveTasks(p.ctx, p.db, topic, taskapi.ReviveAppend, task); err != nil {
			p.t.Fatalf("setup: ReviveTasks(%q, ReviveAppend, %v): %v", topic, task, err)
		}
	case taskapi.Redundant:
		p.push(topic, taskapi.Replace, taskapi.Creation{Identifier: id, Input: input + "-successor"})
	default:
		p.t.Fatalf("setup: inState cannot make a task %v", state)
	}
	if got := p.info(topic, task.Sequence).State; got != state {
		p.t.Fatalf("setup: task %v of %q is %v, want %v", task, topic, got, state)
	}
	return task
}

// suspendedTask pushes one Suspended task of topic with identifier id.
func (p *ppcEnv[Tx]) suspendedTask(topic, id string) taskapi.Task {
	p.t.Helper()
	creation := taskapi.Creation{Identifier: id, Input: "in-" + id + "-pushed-suspended", Suspended: true}
	return p.push(topic, taskapi.Append, creation)[0]
}

// resetTask pushes a task of topic with identifier id, completes it with
// Success and revives it with ReviveReset: a Ready task whose descent is
// Succeeded.
func (p *ppcEnv[Tx]) resetTask(topic, id string) taskapi.Task {
	p.t.Helper()
	task := p.inState(topic, id, taskapi.Succeeded)
	if _, err := p.repo.ReviveTasks(p.ctx, p.db, topic, taskapi.ReviveReset, task); err != nil {
		p.t.Fatalf("setup: ReviveTasks(%q, ReviveReset, %v): %v", topic, task, err)
	}
	if info := p.info(topic, task.Sequence); info.State != taskapi.Ready || info.Descent != taskapi.Succeeded {
		p.t.Fatalf("setup: reset task %v is %v with descent %v, want READY with descent SUCCEEDED",
			task, info.State, info.Descent)
	}
	return task
}

// zoo makes tasks of topic with identifier id in every state a task can be
// in, keyed by a name: the state's lower-case name, "pushed-suspended" for a
// task pushed Suspended and "reset" for a Ready task with descent Succeeded.
// Redundant and Recreated leave a newer Ready task of id behind as well.
func (p *ppcEnv[Tx]) zoo(topic, id string) map[string]taskapi.Task {
	p.t.Helper()
	z := map[string]taskapi.Task{}
	// Redundant first: the Replace push that makes it would touch the others.
	for _, state := range []taskapi.State{
		taskapi.Redundant, taskapi.Recreated, taskapi.Active, taskapi.Expired, taskapi.Failed,
		taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Ready,
	} {
		z[strings.ToLower(state.String())] = p.inState(topic, id, state)
	}
	z["pushed-suspended"] = p.suspendedTask(topic, id)
	z["reset"] = p.resetTask(topic, id)
	return z
}

// snapshot returns every task of each topic, in ascending order.
func (p *ppcEnv[Tx]) snapshot(topics ...string) map[string][]taskapi.Info {
	p.t.Helper()
	snap := map[string][]taskapi.Info{}
	for _, topic := range topics {
		snap[topic] = p.all(topic)
	}
	return snap
}

// wantUnchanged fails the test unless every topic of before holds exactly the
// tasks it held, with every field as it was.
func (p *ppcEnv[Tx]) wantUnchanged(before map[string][]taskapi.Info) {
	p.t.Helper()
	for topic, infos := range before {
		if now := p.all(topic); len(now) != len(infos) {
			p.t.Errorf("topic %q holds %d tasks, want the %d it held before", topic, len(now), len(infos))
		}
		p.wantFates(topic, infos, func(taskapi.Info) (taskapi.Info, bool, bool) {
			return taskapi.Info{}, false, false
		})
	}
}

// wantFates checks every task of before (all tasks of topic at an earlier
// point) against fate, which returns the expected task and whether it
// changed, or gone when it must have been deleted. An unchanged task must
// equal its earlier self in every field; a changed task must have the
// expected state and descent and keep its sequence, identifier, input,
// reference and creation time. Tasks of topic that are not in before are
// ignored.
func (p *ppcEnv[Tx]) wantFates(topic string, before []taskapi.Info, fate func(taskapi.Info) (want taskapi.Info, changed, gone bool)) {
	p.t.Helper()
	now := map[int64]taskapi.Info{}
	for _, info := range p.all(topic) {
		now[info.Sequence] = info
	}
	for _, old := range before {
		want, changed, gone := fate(old)
		got, ok := now[old.Sequence]
		switch {
		case gone && ok:
			p.t.Errorf("task %d (%s, was %v) of %q still exists as %v, want it deleted",
				old.Sequence, old.Identifier, old.State, topic, got.State)
		case gone:
		case !ok:
			p.t.Errorf("task %d (%s, was %v) of %q is gone, want it kept", old.Sequence, old.Identifier, old.State, topic)
		case !changed:
			if !ppcSameInfo(got, old) {
				p.t.Errorf("task %d of %q changed:\n got %s\nwant %s", old.Sequence, topic, ppcFormat(got), ppcFormat(old))
			}
		default:
			if got.State != want.State || got.Descent != want.Descent {
				p.t.Errorf("task %d (%s, was %v/%v) of %q is %v with descent %v, want %v with descent %v",
					old.Sequence, old.Identifier, old.State, old.Descent, topic, got.State, got.Descent, want.State, want.Descent)
			}
			if got.Task != old.Task || got.Reference != old.Reference || !got.Created.Equal(old.Created) {
				p.t.Errorf("task %d of %q changed its identity:\n got %s\nwant %s", old.Sequence, topic, ppcFormat(got), ppcFormat(old))
			}
		}
	}
}

// ppcWantTasks fails the test unless got equals want, in order.
func ppcWantTasks(t *testing.T, what string, got, want []taskapi.Task) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// ppcWantNone fails the test unless err is nil and tasks is empty.
func ppcWantNone(t *testing.T, what string, tasks []taskapi.Task, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(tasks) != 0 {
		t.Fatalf("%s = %v, want nothing", what, tasks)
	}
}

// ppcWantTime fails the test unless tm is a non-zero time in UTC near the
// test's own clock.
func ppcWantTime(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.IsZero() {
		t.Errorf("%s is zero", what)
		return
	}
	if tm.Location() != time.UTC {
		t.Errorf("%s = %v has location %v, want UTC", what, tm, tm.Location())
	}
	if d := time.Since(tm); d > ppcClockSlack || d < -ppcClockSlack {
		t.Errorf("%s = %v is %v away from now (%v), want within %v", what, tm, d, time.Now().UTC(), ppcClockSlack)
	}
}

// ppcSameInfo reports whether a and b describe the same task in the same
// state, comparing times as instants.
func ppcSameInfo(a, b taskapi.Info) bool {
	return a.Task == b.Task && a.State == b.State && a.Descent == b.Descent &&
		a.Owner == b.Owner && a.Reference == b.Reference && a.Output == b.Output &&
		a.Created.Equal(b.Created) && a.Completed.Equal(b.Completed) &&
		a.NotBefore.Equal(b.NotBefore) && a.Revivals == b.Revivals
}

// ppcFormat renders an Info for failure messages.
func ppcFormat(i taskapi.Info) string {
	return strings.Join([]string{
		"seq=" + strconv.FormatInt(i.Sequence, 10), "id=" + i.Identifier, "input=" + ppcShort(i.Input),
		"state=" + i.State.String(), "descent=" + i.Descent.String(), "owner=" + i.Owner,
		"ref=" + i.Reference, "output=" + ppcShort(i.Output),
		"created=" + i.Created.Format(time.RFC3339Nano), "completed=" + i.Completed.Format(time.RFC3339Nano),
		"notbefore=" + i.NotBefore.Format(time.RFC3339Nano), "revivals=" + strconv.Itoa(i.Revivals),
	}, " ")
}

// ppcShort shortens long texts for failure messages.
func ppcShort(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ppcIDs returns the identifiers of tasks, in order.
func ppcIDs(tasks []taskapi.Task) []string {
	ids := make([]string, len(tasks))
	for i, task := range tasks {
		ids[i] = task.Identifier
	}
	return ids
}

// ppcDone builds a Completion.
func ppcDone(task taskapi.Task, result taskapi.Result, output string) taskapi.Completion {
	return taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: result, Output: output}}
}
