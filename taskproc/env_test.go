package taskproc_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// patience is how long a test waits for something that must happen: far
// longer than it takes, so that only a test that would hang runs out of it.
const patience = 3 * time.Minute

// topic is the topic of every test; other is a second one.
const topic, other = "t", "u"

// A suiteCase is one case of the suite, on an env of its own.
type suiteCase[Tx any] func(t *testing.T, e *env[Tx])

// suite runs every case of the runtime's suite against b, in parallel.
func suite[Tx any](t *testing.T, b backend[Tx]) {
	all := map[string]suiteCase[Tx]{}
	loopCases(all)
	settleCases(all)
	stopCases(all)
	handlerCases(all)
	clientCases(all)
	fleetCases(all)
	retryCases(all)
	scheduleCases(all)
	taskTxCases(all)
	edgeCases(all)
	cancelCases(all)
	cancelEffectCases(all)
	termHoldCases(all)
	workerCases(all)
	groupCases(all)
	for _, name := range slices.Sorted(maps.Keys(all)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			all[name](t, newEnv(t, b))
		})
	}
}

// env is one case's world: a fresh database with topics t and u and a
// registered owner "proc" that the runtime polls as.
type env[Tx any] struct {
	t        *testing.T
	b        backend[Tx]
	ctx      context.Context
	db       Tx
	repo     fullRepo[Tx]
	transact taskproc.Transact[Tx]
}

func newEnv[Tx any](t *testing.T, b backend[Tx]) *env[Tx] {
	e := &env[Tx]{t: t, b: b, ctx: t.Context(), db: b.open(t)}
	e.transact = b.transact(e.db)
	e.repo = e.owner("proc")
	for _, name := range []string{topic, other} {
		if _, err := e.repo.Initialize(e.ctx, e.db, name); err != nil {
			t.Fatalf("Initialize(%q): %v", name, err)
		}
	}
	return e
}

// owner returns a registered repository of another owner.
func (e *env[Tx]) owner(name string) fullRepo[Tx] {
	e.t.Helper()
	repo, err := e.b.newRepo(name)
	if err == nil {
		_, err = repo.Register(e.ctx, e.db)
	}
	if err != nil {
		e.t.Fatalf("owner %q: %v", name, err)
	}
	return repo
}

// push pushes one task per identifier to topic.
func (e *env[Tx]) push(identifiers ...string) []taskapi.Task {
	e.t.Helper()
	return e.pushTo(topic, identifiers...)
}

// pushTo pushes one task per identifier to a topic, a thousand per call.
func (e *env[Tx]) pushTo(name string, identifiers ...string) []taskapi.Task {
	e.t.Helper()
	var tasks []taskapi.Task
	for chunk := range slices.Chunk(identifiers, 1000) {
		creations := make([]taskapi.Creation, len(chunk))
		for i, id := range chunk {
			creations[i] = taskapi.Creation{Identifier: id, Input: "in-" + id}
		}
		pushed, err := e.repo.Push(e.ctx, e.db, name, taskapi.Append, creations...)
		if err != nil {
			e.t.Fatalf("Push to %q: %v", name, err)
		}
		tasks = append(tasks, pushed...)
	}
	return tasks
}

// ids returns n identifiers that cycle through distinct of them.
func ids(n, distinct int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("id-", i%distinct)
	}
	return out
}

// infos returns every task of a topic, ascending.
func (e *env[Tx]) infos(name string) []taskapi.Info {
	e.t.Helper()
	var all []taskapi.Info
	for cursor := taskapi.Inception; ; {
		page, err := e.repo.Page(e.ctx, e.db, name, taskapi.Listing{}, cursor, 1000, taskapi.Forward)
		if err != nil {
			e.t.Fatalf("Page(%q): %v", name, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		cursor = page[len(page)-1].Sequence
	}
}

// info returns the task of topic with sequence.
func (e *env[Tx]) info(task taskapi.Task) taskapi.Info {
	e.t.Helper()
	info, ok, err := e.repo.Lookup(e.ctx, e.db, topic, task.Sequence)
	if err != nil || !ok {
		e.t.Fatalf("Lookup(%d) = %v, %v", task.Sequence, ok, err)
	}
	return info
}

// count returns how many tasks of topic are in one of states.
func (e *env[Tx]) count(states ...taskapi.State) int {
	e.t.Helper()
	// A count, not a page of every task: eventually runs this often, and
	// SQLite under the race detector is slow enough that listing thousands
	// of tasks would starve the runtime under test.
	counts, err := e.repo.Count(e.ctx, e.db, taskapi.Total, taskapi.Counting{Topic: topic, States: states},
		taskapi.Range{From: taskapi.Inception, To: taskapi.MaxSequence})
	if err != nil {
		e.t.Fatalf("Count(%v): %v", states, err)
	}
	n := int64(0)
	for _, s := range counts[topic] {
		n += s.Count
	}
	return int(n)
}

// eventually waits until cond holds, checking it every few milliseconds,
// and fails the test when patience runs out.
func (e *env[Tx]) eventually(what string, cond func() bool) {
	e.t.Helper()
	eventually(e.t, what, cond)
}

// eventually waits until cond holds, checking it every few milliseconds,
// and fails t when patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline, pause := time.Now().Add(patience), time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond) // the checks cost too
	}
}

// allIn waits until every task of topic is in one of states.
func (e *env[Tx]) allIn(n int, states ...taskapi.State) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%d tasks in %v", n, states), func() bool { return e.count(states...) == n })
}

// manager returns a Manager of topic with handler, polling as "proc",
// stopped when the test ends.
func (e *env[Tx]) manager(handler taskproc.Handler, opts ...taskproc.TopicOption) *taskproc.Manager[Tx] {
	e.t.Helper()
	m, err := taskproc.NewManager[Tx](e.repo, e.transact, topic, handler, opts...)
	if err != nil {
		e.t.Fatalf("NewManager: %v", err)
	}
	e.t.Cleanup(func() { stopWithin(e.t, m.Stop) })
	return m
}

// start starts m with a context that outlives the test's, which ends
// before the test's cleanups stop m.
// On a single writer's one connection (SQLite) a handler whose functions
// hold connections cannot start, as documented (docs/backends.md), and the
// case skips: pool_test.go checks that refusal.
func (e *env[Tx]) start(m interface{ Start(context.Context) error }) {
	e.t.Helper()
	err := m.Start(context.WithoutCancel(e.ctx))
	if e.b.single && errors.Is(err, taskapi.ErrInvalidArgument) && strings.Contains(err.Error(), "each holding a connection") {
		e.t.Skipf("the pool's one connection cannot serve this handler: %v", err)
	}
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
}

// stopWithin stops with a generous deadline and fails t when that fails.
func stopWithin(t *testing.T, stop func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// succeed decides every task Success.
func succeed(context.Context, taskapi.Task) (taskapi.Decision, error) {
	return taskapi.Decision{Result: taskapi.Success}, nil
}

// recorder is an Observer that keeps every event, and when it was told.
type recorder struct {
	mu     sync.Mutex
	events []taskproc.Event
	times  []time.Time
}

func (r *recorder) Observe(e taskproc.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.times = append(r.times, time.Now())
}

// summary lists the events told, one line each, for a failure's message.
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, e := range r.events {
		fmt.Fprintf(&b, "\n  %s %v tasks=%d err=%v", r.times[i].Format("15:04:05.000"), e.Kind, len(e.Tasks), e.Err)
	}
	return b.String()
}

// when returns when the events of kind were told.
func (r *recorder) when(kind taskproc.EventKind) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for i, e := range r.events {
		if e.Kind == kind {
			out = append(out, r.times[i])
		}
	}
	return out
}

// of returns the events of kind.
func (r *recorder) of(kind taskproc.EventKind) []taskproc.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []taskproc.Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// within waits for ch to be closed or to deliver, failing t after patience.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("%s: not within %v", what, patience)
		panic("unreachable")
	}
}
