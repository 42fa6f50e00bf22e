package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// compPatience bounds every wait of these tests. It only fails a test that
// would hang; no test depends on how long anything takes.
const compPatience = 10 * time.Second

// compConcurrencies are the EachStep concurrencies the tests run with.
var compConcurrencies = []int{0, 1, 5}

// compTx is the fake transaction: what the repository writes through it is
// logged, and kept only when the completion commits.
type compTx struct{ log *compLog }

type compLog struct{ calls []compCall }

// compCall is a Push or a Join that the fake repository received.
type compCall struct {
	Op        string // "push" or "join"
	Topic     string
	Mode      string // the insertion or the junction
	Creations []taskapi.Creation
	Groups    [][]string
}

// compRepo is the fake Repository[compTx]; only Push and Join do anything.
type compRepo struct{ pushErr error }

func (r compRepo) Push(_ context.Context, tx compTx, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if r.pushErr != nil {
		return nil, r.pushErr
	}
	tx.log.calls = append(tx.log.calls, compCall{Op: "push", Topic: topic, Mode: insertion.String(), Creations: creations})
	return nil, nil
}

func (compRepo) Join(_ context.Context, tx compTx, topic string, junction taskapi.Junction, groups ...[]string) ([]string, error) {
	tx.log.calls = append(tx.log.calls, compCall{Op: "join", Topic: topic, Mode: junction.String(), Groups: groups})
	return nil, nil
}

func (compRepo) Poll(context.Context, compTx, string, int, ...taskapi.PollOption) ([]taskapi.Task, error) {
	return nil, nil
}
func (compRepo) Complete(context.Context, compTx, string, ...taskapi.Completion) error { return nil }
func (compRepo) Release(context.Context, compTx, string, ...taskapi.Task) error        { return nil }
func (compRepo) Owner() string                                                         { return "composite-test" }
func (compRepo) Register(context.Context, compTx) (bool, error)                        { return true, nil }
func (compRepo) Heartbeat(context.Context, compTx) error                               { return nil }
func (compRepo) Expire(context.Context, compTx, time.Duration) (int64, error)          { return 0, nil }
func (compRepo) PurgeOwners(context.Context, compTx, time.Duration) (int64, error)     { return 0, nil }
func (compRepo) Reassign(context.Context, compTx, string, ...taskapi.Assignment) error { return nil }
func (compRepo) Topics(context.Context, compTx) ([]string, error)                      { return nil, nil }
func (compRepo) Count(context.Context, compTx, taskapi.Snapshot, taskapi.Counting, taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	return nil, nil
}
func (compRepo) Page(context.Context, compTx, string, taskapi.Listing, int64, int, taskapi.Direction) ([]taskapi.Info, error) {
	return nil, nil
}
func (compRepo) Lookup(context.Context, compTx, string, int64) (taskapi.Info, bool, error) {
	return taskapi.Info{}, false, nil
}
func (compRepo) ReviveTasks(context.Context, compTx, string, taskapi.Revivification, ...taskapi.Task) ([]taskapi.Revival, error) {
	return nil, nil
}
func (compRepo) Defer(context.Context, compTx, string, time.Time, ...taskapi.Task) error { return nil }
func (compRepo) NextDue(context.Context, compTx, string) (time.Time, error)              { return time.Time{}, nil }
func (compRepo) Mark(context.Context, compTx, string, string) (time.Time, error) {
	return time.Time{}, nil
}
func (compRepo) Advance(context.Context, compTx, string, string, time.Time, time.Time) (bool, error) {
	return false, nil
}

var _ Repository[compTx] = compRepo{}

// compSettler is the fake settler: it runs a completion as the runtime does
// (attempts times, as after conflicts, keeping the last) and records how the
// batch was settled.
type compSettler struct {
	attempts int // how often complete runs the completion; below one is one

	mu        sync.Mutex
	how       string
	decisions Decisions
	cause     error
	calls     []compCall
	resumed   []string
}

func (s *compSettler) accepts(completion any) bool {
	_, ok := completion.(func(context.Context, compTx) (Decisions, error))
	return ok
}

func (s *compSettler) handedOver() *atomic.Int64 { return nil }

func (s *compSettler) write(b *Batch, how settlement) error {
	switch how.intent {
	case toComplete:
		return s.complete(b, how.completion)
	case toFail:
		s.settled(b, "failed", func() { s.cause = how.cause })
	case toRelease:
		s.settled(b, "released", func() {})
	default:
		s.settled(b, "abandoned", func() {})
	}
	return nil
}

func (s *compSettler) complete(b *Batch, completion any) error {
	var (
		tx          compTx
		completions []taskapi.Completion
		err         error
	)
	for range max(s.attempts, 1) {
		b.after, tx = nil, compTx{log: &compLog{}}
		var d Decisions
		if d, err = runCompletion(b.ctx, tx, completion); err == nil {
			completions, err = completionsOf(b.tasks, b.tasks, d)
		}
	}
	if err != nil {
		s.settled(b, "failed", func() { s.cause = err })
		return err
	}
	s.settled(b, "completed", func() {
		s.decisions, s.calls, s.resumed = decisionsOf(completions), tx.log.calls, slices.Clone(b.after)
	})
	return nil
}

// settled records how b was settled, with what record sets, and finishes b.
func (s *compSettler) settled(b *Batch, how string, record func()) {
	s.mu.Lock()
	s.how = how
	record()
	s.mu.Unlock()
	b.finish(how)
}

// compBatch returns a batch of tasks settled by a fake settler.
func compBatch(tasks ...taskapi.Task) (*Batch, *compSettler) {
	writes, stopWrites := context.WithCancelCause(context.Background())
	ctx, cancel := context.WithCancelCause(writes)
	s := &compSettler{}
	b := &Batch{
		topic: "composite", tasks: tasks, polled: time.Now(), ctx: ctx, cancel: cancel,
		writes: writes, stopWrites: stopWrites, done: make(chan struct{}), settler: s, repo: compRepo{},
	}
	return b, s
}

// compTasks returns tasks 1 to n, with identifiers id1 to idn.
func compTasks(n int) []taskapi.Task {
	tasks := make([]taskapi.Task, n)
	for i := range tasks {
		tasks[i] = taskapi.Task{Sequence: int64(i + 1), Identifier: fmt.Sprintf("id%d", i+1)}
	}
	return tasks
}

// compHandler builds c, failing the test on a build error.
func compHandler(t *testing.T, c *Composite[compTx]) Handler {
	t.Helper()
	h, err := c.Handler()
	if err != nil {
		t.Fatalf("Handler: %v", err)
	}
	return h
}

// compRun hands b to h as the runtime does (an error fails b, or releases
// it when b's context ended), waits until b is settled and returns the
// error of Handle.
func compRun(t *testing.T, h Handler, b *Batch) error {
	t.Helper()
	err := handle(h, b.ctx, b)
	switch {
	case err == nil:
	case b.ctx.Err() != nil:
		_ = b.Release()
	default:
		_ = b.Fail(err)
	}
	select {
	case <-b.Done():
	case <-time.After(compPatience):
		t.Fatal("the batch was not settled")
	}
	return err
}

// compRunOK runs b through h and expects it completed.
func compRunOK(t *testing.T, h Handler, b *Batch, s *compSettler) {
	t.Helper()
	if err := compRun(t, h, b); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if s.how != "completed" {
		t.Fatalf("batch %s (cause %v), want completed", s.how, s.cause)
	}
}

// compDecision is a shorthand.
func compDecision(r taskapi.Result, output string) taskapi.Decision {
	return taskapi.Decision{Result: r, Output: output}
}

// compOutcome is a shorthand.
func compOutcome(r taskapi.Result, output string, flow Flow) Outcome {
	return Outcome{Decision: compDecision(r, output), Flow: flow}
}

// compAll returns a step that gives every task it gets o.
func compAll(o Outcome) BatchStep {
	return func(_ context.Context, tasks []taskapi.Task, _ *Supplement) (Outcomes, error) {
		out := Outcomes{}
		for _, task := range tasks {
			out[task] = o
		}
		return out, nil
	}
}

// compEach returns an EachStep that gives a task its outcome from decide.
func compEach(decide func(task taskapi.Task) (Outcome, error)) EachStep {
	return func(_ context.Context, task taskapi.Task, _ *Supplement) (Outcome, error) { return decide(task) }
}

// checkDecisions compares the recorded decisions with want.
func checkDecisions(t *testing.T, s *compSettler, want Decisions) {
	t.Helper()
	if !maps.Equal(s.decisions, want) {
		t.Errorf("decisions:\n got %v\nwant %v", s.decisions, want)
	}
}

// compRecorder records the tasks each step got.
type compRecorder struct {
	mu    sync.Mutex
	given map[string][]taskapi.Task
	order []string // step names, once per call
}

func (r *compRecorder) record(step string, tasks ...taskapi.Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.given == nil {
		r.given = map[string][]taskapi.Task{}
	}
	r.given[step] = append(r.given[step], tasks...)
	r.order = append(r.order, step)
}

// step returns a step that records its tasks and gives them all o.
func (r *compRecorder) step(name string, o Outcome) BatchStep {
	return func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
		r.record(name, tasks...)
		return compAll(o)(ctx, tasks, s)
	}
}

// sequences returns the sequences of the tasks that step got, ascending.
func (r *compRecorder) sequences(step string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var seqs []int64
	for _, task := range r.given[step] {
		seqs = append(seqs, task.Sequence)
	}
	slices.Sort(seqs)
	return seqs
}

// forConcurrencies runs test once for each of compConcurrencies.
func forConcurrencies(t *testing.T, test func(t *testing.T, n int)) {
	for _, n := range compConcurrencies {
		t.Run(fmt.Sprintf("concurrency=%d", n), func(t *testing.T) { test(t, n) })
	}
}

func TestCompositeNoStepsSucceeds(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, NewComposite[compTx](WithConcurrency(n))), b, s)
		checkDecisions(t, s, Decisions{tasks[0]: compDecision(taskapi.Success, ""), tasks[1]: compDecision(taskapi.Success, ""), tasks[2]: compDecision(taskapi.Success, "")})
		if len(s.calls) != 0 || len(s.resumed) != 0 {
			t.Errorf("follow-ups %v, resumed %v; want none", s.calls, s.resumed)
		}
	})
}

func TestCompositeStepErrorFailsItsTasksOnly(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(4)
		c := NewComposite[compTx](WithConcurrency(n)).
			Each("first", compEach(func(task taskapi.Task) (Outcome, error) {
				switch task.Sequence {
				case 1:
					return compOutcome(taskapi.Failure, "bad one", FlowDefault), nil
				case 4:
					return Outcome{}, errors.New("each failed")
				}
				return compOutcome(taskapi.Success, "ok", FlowDefault), nil
			})).
			Step("second", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				return Outcomes{tasks[0]: compOutcome(taskapi.Success, "", FlowDefault)}, errors.New("boom")
			}, "first")
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Failure, "bad one"),
			tasks[1]: compDecision(taskapi.Failure, "ok; boom"),
			tasks[2]: compDecision(taskapi.Failure, "ok; boom"),
			tasks[3]: compDecision(taskapi.Failure, "each failed"),
		})
	})
}

func TestCompositeResultError(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		c := NewComposite[compTx](WithConcurrency(n)).
			Step("filter", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				return nil, EndWith(taskapi.Filter, errors.New("not mine"))
			}).
			Each("suspend", compEach(func(task taskapi.Task) (Outcome, error) {
				if task.Sequence == 2 {
					return Outcome{}, fmt.Errorf("wrapped: %w", EndWith(taskapi.Suspension, errors.New("later")))
				}
				return compOutcome(taskapi.Success, "", FlowDefault), nil
			}))
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Filter, "not mine"),
			tasks[1]: compDecision(taskapi.Suspension, "not mine; wrapped: later"),
			tasks[2]: compDecision(taskapi.Filter, "not mine"),
		})
	})
}

func TestCompositePanicFailsTasks(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		c := NewComposite[compTx](WithConcurrency(n)).
			Step("batch", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) { panic("kaboom") }).
			Each("each", compEach(func(task taskapi.Task) (Outcome, error) {
				if task.Sequence == 2 {
					panic(errors.New("each kaboom"))
				}
				return compOutcome(taskapi.Success, "", FlowDefault), nil
			})).
			Subset("subset", func(task taskapi.Task) bool {
				if task.Sequence == 3 {
					panic("match kaboom")
				}
				return true
			}, compAll(compOutcome(taskapi.Success, "", FlowDefault)), nil)
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		all := "panic: kaboom; "
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Failure, all+"panic: match kaboom"),
			tasks[1]: compDecision(taskapi.Failure, all+"panic: each kaboom; panic: match kaboom"),
			tasks[2]: compDecision(taskapi.Failure, all+"panic: match kaboom"),
		})
	})
}

func TestCompositeChainRunsInOrder(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		var r compRecorder
		each := func(name string) EachStep {
			return compEach(func(task taskapi.Task) (Outcome, error) {
				r.record(name, task)
				return compOutcome(taskapi.Success, name, FlowDefault), nil
			})
		}
		c := NewComposite[compTx](WithConcurrency(n)).
			Each("a", each("a")).
			Step("b", r.step("b", compOutcome(taskapi.Success, "b", FlowDefault)), "a").
			Each("c", each("c"), "b")
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		if want := []string{"a", "a", "a", "b", "c", "c", "c"}; !slices.Equal(r.order, want) {
			t.Errorf("steps ran %v, want %v", r.order, want)
		}
		for _, task := range tasks {
			if d := s.decisions[task]; d != compDecision(taskapi.Success, "a; b; c") {
				t.Errorf("task %d: %v", task.Sequence, d)
			}
		}
	})
}

func TestCompositeFlow(t *testing.T) {
	tasks := compTasks(4)
	var r compRecorder
	c := NewComposite[compTx]().
		Step("one", func(_ context.Context, got []taskapi.Task, _ *Supplement) (Outcomes, error) {
			r.record("one", got...)
			return Outcomes{
				tasks[0]: compOutcome(taskapi.Failure, "f1", FlowDefault),
				tasks[1]: compOutcome(taskapi.Failure, "f2", Continue),
				tasks[2]: compOutcome(taskapi.Success, "", FlowDefault),
				tasks[3]: compOutcome(taskapi.Success, "halted", Halt),
			}, nil
		}).
		Step("two", r.step("two", compOutcome(taskapi.Success, "", FlowDefault)), "one").
		Step("three", r.step("three", compOutcome(taskapi.Success, "3", FlowDefault)), "two")
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	// Task 2 goes on: Continue is the last explicit flow, even through a
	// step that gave it none. Task 1 failed, task 4 was halted.
	for _, step := range []string{"two", "three"} {
		if got := r.sequences(step); !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("step %s got tasks %v, want [2 3]", step, got)
		}
	}
	checkDecisions(t, s, Decisions{
		tasks[0]: compDecision(taskapi.Failure, "f1"),
		tasks[1]: compDecision(taskapi.Failure, "f2; 3"),
		tasks[2]: compDecision(taskapi.Success, "3"),
		tasks[3]: compDecision(taskapi.Success, "halted"),
	})
}

// A flow applies to the decision it was given with (issue 21): a step that
// lets its Failure pass with Continue does not let a later step's Failure
// pass, and a Continue of one ancestor does not undo the default stop of
// another.
func TestCompositeAMarkAppliesToItsOwnDecision(t *testing.T) {
	tasks := compTasks(1)
	var r compRecorder
	c := NewComposite[compTx]().
		Step("lenient", compAll(compOutcome(taskapi.Failure, "tolerated", Continue))).
		Step("strict", r.step("strict", compOutcome(taskapi.Failure, "fatal", FlowDefault)), "lenient").
		Step("after", r.step("after", compOutcome(taskapi.Success, "", FlowDefault)), "strict").
		Step("side", compAll(compOutcome(taskapi.Failure, "side", FlowDefault))).
		Step("join", r.step("join", compOutcome(taskapi.Success, "", FlowDefault)), "lenient", "side")
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	if got := r.sequences("strict"); !slices.Equal(got, []int64{1}) {
		t.Errorf("step strict got %v, want the task its ancestor let pass", got)
	}
	for _, step := range []string{"after", "join"} {
		if got := r.sequences(step); len(got) != 0 {
			t.Errorf("step %s got %v, want nothing: a later Failure stops the task whatever an earlier Continue said", step, got)
		}
	}
	checkDecisions(t, s, Decisions{tasks[0]: compDecision(taskapi.Failure, "tolerated; fatal; side")})
}

func TestCompositeLaterFlowWins(t *testing.T) {
	tasks := compTasks(2)
	var r compRecorder
	c := NewComposite[compTx]().
		Step("go", compAll(compOutcome(taskapi.Failure, "", Continue))).
		Step("stop", compAll(compOutcome(taskapi.Success, "", Halt)), "go").
		Step("last", r.step("last", compOutcome(taskapi.Success, "", FlowDefault)), "stop").
		Step("also", r.step("also", compOutcome(taskapi.Success, "", FlowDefault)), "go")
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	if got := r.sequences("last"); len(got) != 0 {
		t.Errorf("step last got %v after a Halt", got)
	}
	if got := r.sequences("also"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("step also got %v, want [1 2]: it does not depend on stop", got)
	}
}

func TestCompositeIndependentStepsRunConcurrently(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		leftStarted, rightStarted := make(chan struct{}), make(chan struct{})
		var once sync.Once
		await := func(ch chan struct{}) error {
			select {
			case <-ch:
				return nil
			case <-time.After(compPatience):
				return errors.New("the other step never started")
			}
		}
		c := NewComposite[compTx](WithConcurrency(n)).
			Each("left", func(_ context.Context, _ taskapi.Task, _ *Supplement) (Outcome, error) {
				once.Do(func() { close(leftStarted) })
				return compOutcome(taskapi.Success, "", FlowDefault), await(rightStarted)
			}).
			Step("right", func(ctx context.Context, got []taskapi.Task, s *Supplement) (Outcomes, error) {
				close(rightStarted)
				if err := await(leftStarted); err != nil {
					return nil, err
				}
				return compAll(compOutcome(taskapi.Success, "", FlowDefault))(ctx, got, s)
			})
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		for task, d := range s.decisions {
			if d.Result != taskapi.Success {
				t.Errorf("task %d: %v", task.Sequence, d)
			}
		}
	})
}

func TestCompositeEachConcurrency(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		width := max(n, 1)
		tasks := compTasks(width * 2)
		var cur, peak, arrived atomic.Int64
		all := make(chan struct{})
		c := NewComposite[compTx](WithConcurrency(n)).
			Each("each", func(_ context.Context, task taskapi.Task, _ *Supplement) (Outcome, error) {
				now := cur.Add(1)
				defer cur.Add(-1)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				if task.Sequence > int64(width) {
					return compOutcome(taskapi.Success, "", FlowDefault), nil
				}
				// The first width tasks wait for each other: they run at once.
				if arrived.Add(1) == int64(width) {
					close(all)
				}
				select {
				case <-all:
					return compOutcome(taskapi.Success, "", FlowDefault), nil
				case <-time.After(compPatience):
					return Outcome{}, errors.New("tasks ran one after the other")
				}
			})
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		for task, d := range s.decisions {
			if d.Result != taskapi.Success {
				t.Errorf("task %d: %v", task.Sequence, d)
			}
		}
		if peak.Load() != int64(width) {
			t.Errorf("at most %d tasks ran at once, want %d", peak.Load(), width)
		}
	})
}

func TestCompositeWorstOfMergeInRegistrationOrder(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		yDone := make(chan struct{})
		c := NewComposite[compTx](WithConcurrency(n)).
			// x finishes after y, yet its outputs come first: it was
			// registered first.
			Step("x", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				select {
				case <-yDone:
				case <-time.After(compPatience):
					return nil, errors.New("y never finished")
				}
				return Outcomes{
					tasks[0]: compOutcome(taskapi.Success, "x1", Continue),
					tasks[1]: compOutcome(taskapi.Suspension, "", Continue),
					tasks[2]: compOutcome(taskapi.Success, "", FlowDefault),
				}, nil
			}).
			Step("y", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				defer close(yDone)
				return Outcomes{
					tasks[0]: compOutcome(taskapi.Filter, "y1", Continue),
					tasks[1]: compOutcome(taskapi.Failure, "y2", FlowDefault),
					tasks[2]: compOutcome(taskapi.Success, "y3", FlowDefault),
				}, nil
			}).
			Each("z", compEach(func(task taskapi.Task) (Outcome, error) {
				if task.Sequence == 1 {
					return compOutcome(taskapi.Suspension, "z1", FlowDefault), nil
				}
				return compOutcome(taskapi.Success, fmt.Sprintf("z%d", task.Sequence), FlowDefault), nil
			}), "x", "y")
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		// Task 2 does not reach z: x's Continue lets x's own Suspension
		// pass, not y's Failure.
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Suspension, "x1; y1; z1"),
			tasks[1]: compDecision(taskapi.Failure, "y2"),
			tasks[2]: compDecision(taskapi.Success, "y3; z3"),
		})
	})
}

func TestCompositeDecisionForATaskNotGivenFailsTheBatch(t *testing.T) {
	tasks := compTasks(3)
	stranger := taskapi.Task{Sequence: 99, Identifier: "stranger"}
	c := NewComposite[compTx]().
		Step("one", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
			return Outcomes{
				tasks[0]: compOutcome(taskapi.Success, "", FlowDefault),
				tasks[1]: compOutcome(taskapi.Success, "", Halt),
				tasks[2]: compOutcome(taskapi.Success, "", FlowDefault),
			}, nil
		}).
		Step("two", func(ctx context.Context, got []taskapi.Task, s *Supplement) (Outcomes, error) {
			out, _ := compAll(compOutcome(taskapi.Success, "", FlowDefault))(ctx, tasks, s)
			out[stranger] = compOutcome(taskapi.Success, "", FlowDefault)
			return out, nil
		}, "one")
	b, s := compBatch(tasks...)
	err := compRun(t, compHandler(t, c), b)
	if err == nil || !strings.Contains(err.Error(), `step "two"`) || !strings.Contains(err.Error(), "2, 99") {
		t.Fatalf("Handle: %v, want an error naming step two and tasks 2, 99", err)
	}
	if s.how != "failed" || !errors.Is(s.cause, err) {
		t.Errorf("batch %s with cause %v, want failed with %v", s.how, s.cause, err)
	}
}

func TestCompositeTaskLeftOutFails(t *testing.T) {
	tasks := compTasks(3)
	c := NewComposite[compTx]().
		Step("pick", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
			return Outcomes{tasks[1]: compOutcome(taskapi.Success, "picked", FlowDefault)}, nil
		})
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	checkDecisions(t, s, Decisions{
		tasks[0]: compDecision(taskapi.Failure, "no decision from step pick"),
		tasks[1]: compDecision(taskapi.Success, "picked"),
		tasks[2]: compDecision(taskapi.Failure, "no decision from step pick"),
	})
}

func TestCompositeUndefinedOutcomeFails(t *testing.T) {
	tasks := compTasks(2)
	c := NewComposite[compTx]().
		Step("odd", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
			return Outcomes{
				tasks[0]: compOutcome(taskapi.Result(7), "", FlowDefault),
				tasks[1]: compOutcome(taskapi.Success, "", Flow(9)),
			}, nil
		})
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	for task, d := range s.decisions {
		if d.Result != taskapi.Failure || !strings.Contains(d.Output, "step odd gave an undefined outcome") {
			t.Errorf("task %d: %v", task.Sequence, d)
		}
	}
}

func TestCompositeSkipsAStepWithNothingInPlay(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(2)
		var calls atomic.Int32
		var r compRecorder
		count := func(context.Context, taskapi.Task, *Supplement) (Outcome, error) {
			calls.Add(1)
			return compOutcome(taskapi.Success, "", FlowDefault), nil
		}
		c := NewComposite[compTx](WithConcurrency(n)).
			Step("fail", compAll(compOutcome(taskapi.Failure, "no", FlowDefault))).
			Each("skipped", count, "fail").
			Step("skipped too", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				calls.Add(1)
				return nil, nil
			}, "skipped").
			Step("independent", r.step("independent", compOutcome(taskapi.Success, "", FlowDefault)))
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		if calls.Load() != 0 {
			t.Errorf("steps without tasks in play ran %d times", calls.Load())
		}
		if got := r.sequences("independent"); !slices.Equal(got, []int64{1, 2}) {
			t.Errorf("independent step got %v", got)
		}
		checkDecisions(t, s, Decisions{tasks[0]: compDecision(taskapi.Failure, "no"), tasks[1]: compDecision(taskapi.Failure, "no")})
	})
}

func TestCompositeSupplementShared(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(3)
		greeting := NewKey[string]("greeting")
		expensive := NewKey[int]("expensive")
		var computed atomic.Int32
		c := NewComposite[compTx](WithConcurrency(n)).
			Step("put", func(ctx context.Context, got []taskapi.Task, s *Supplement) (Outcomes, error) {
				if err := greeting.Put(s, "hello"); err != nil {
					return nil, err
				}
				return compAll(compOutcome(taskapi.Success, "", FlowDefault))(ctx, got, s)
			}).
			Each("get", func(_ context.Context, _ taskapi.Task, s *Supplement) (Outcome, error) {
				v, ok := greeting.Get(s)
				if !ok {
					return Outcome{}, errors.New("no greeting")
				}
				if err := greeting.Put(s, "again"); !errors.Is(err, ErrSupplementTaken) {
					return Outcome{}, fmt.Errorf("second Put: %v", err)
				}
				return compOutcome(taskapi.Success, v, FlowDefault), nil
			}, "put").
			Step("compute", func(ctx context.Context, got []taskapi.Task, s *Supplement) (Outcomes, error) {
				var wg sync.WaitGroup
				errs := make([]error, 32)
				for i := range errs {
					wg.Go(func() {
						v, err := expensive.GetOrCompute(s, func() (int, error) {
							computed.Add(1)
							return 42, nil
						})
						if err == nil && v != 42 {
							err = fmt.Errorf("got %d", v)
						}
						errs[i] = err
					})
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					return nil, err
				}
				return compAll(compOutcome(taskapi.Success, "", FlowDefault))(ctx, got, s)
			}, "put").
			Context(func(_ context.Context, _ compTx, c *Completing) error {
				if v, ok := expensive.Get(c.Supplement()); !ok || v != 42 {
					return fmt.Errorf("the context sees %d, %t", v, ok)
				}
				return nil
			})
		h := compHandler(t, c)
		// The second batch gets a supplement of its own: its Put succeeds.
		for range 2 {
			b, s := compBatch(tasks...)
			compRunOK(t, h, b, s)
			for _, task := range tasks {
				if d := s.decisions[task]; d != compDecision(taskapi.Success, "hello") {
					t.Errorf("task %d: %v", task.Sequence, d)
				}
			}
		}
		if computed.Load() != 2 {
			t.Errorf("computed %d times for two batches, want 2", computed.Load())
		}
	})
}

func TestCompositeContexts(t *testing.T) {
	tasks := compTasks(3)
	var order []int
	var b *Batch
	c := NewComposite[compTx]().
		Step("step", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
			return Outcomes{
				tasks[0]: compOutcome(taskapi.Success, "", FlowDefault),
				tasks[1]: compOutcome(taskapi.Filter, "filtered", FlowDefault),
				tasks[2]: compOutcome(taskapi.Success, "", FlowDefault),
			}, nil
		}).
		Context(func(_ context.Context, tx compTx, c *Completing) error {
			order = append(order, 1)
			select {
			case <-b.Done():
				return errors.New("the context runs after the batch was settled")
			default:
			}
			if tx.log == nil {
				return errors.New("the context did not get the completion's transaction")
			}
			if !slices.Equal(c.Tasks(), tasks) {
				return fmt.Errorf("Tasks: %v", c.Tasks())
			}
			return c.Merge(tasks[0], compDecision(taskapi.Failure, "ctx1"))
		}).
		Context(func(_ context.Context, _ compTx, c *Completing) error {
			order = append(order, 2)
			if d, ok := c.Decision(tasks[0]); !ok || d != compDecision(taskapi.Failure, "ctx1") {
				return fmt.Errorf("Decision of task 1: %v, %t", d, ok)
			}
			if _, ok := c.Decision(taskapi.Task{Sequence: 99}); ok {
				return errors.New("a decision for a task not in the batch")
			}
			if err := c.Merge(taskapi.Task{Sequence: 99}, compDecision(taskapi.Failure, "")); !errors.Is(err, taskapi.ErrInvalidArgument) {
				return fmt.Errorf("Merge of a task not in the batch: %v", err)
			}
			copied := c.Decisions()
			copied[tasks[2]] = compDecision(taskapi.Failure, "not really")
			return c.Merge(tasks[1], compDecision(taskapi.Success, "ctx2 note"))
		}).
		Context(func(context.Context, compTx, *Completing) error {
			order = append(order, 3)
			return nil
		})
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("contexts ran in order %v", order)
	}
	checkDecisions(t, s, Decisions{
		tasks[0]: compDecision(taskapi.Failure, "ctx1"),
		tasks[1]: compDecision(taskapi.Filter, "filtered; ctx2 note"),
		tasks[2]: compDecision(taskapi.Success, ""),
	})
}

func TestCompositeCompletionRetriedStartsAgain(t *testing.T) {
	tasks := compTasks(1)
	c := NewComposite[compTx]().
		Context(func(_ context.Context, _ compTx, c *Completing) error {
			if err := c.Push(tasks[0], "next", taskapi.Append, taskapi.Creation{Identifier: "n"}); err != nil {
				return err
			}
			return c.Merge(tasks[0], compDecision(taskapi.Success, "once"))
		})
	b, s := compBatch(tasks...)
	s.attempts = 3
	compRunOK(t, compHandler(t, c), b, s)
	checkDecisions(t, s, Decisions{tasks[0]: compDecision(taskapi.Success, "once")})
	if len(s.calls) != 1 || !slices.Equal(s.resumed, []string{"next"}) {
		t.Errorf("calls %v, resumed %v; want one push and one topic", s.calls, s.resumed)
	}
}

func TestCompositeFollowUps(t *testing.T) {
	tasks := compTasks(4)
	creation := func(id string) taskapi.Creation { return taskapi.Creation{Identifier: id} }
	tagged := []taskapi.Creation{{Identifier: "a3", Reference: "mine"}}
	var refused []error
	c := NewComposite[compTx]().
		Step("step", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
			return Outcomes{
				tasks[0]: compOutcome(taskapi.Success, "", FlowDefault),
				tasks[1]: compOutcome(taskapi.Failure, "", FlowDefault),
				tasks[2]: compOutcome(taskapi.Success, "", FlowDefault),
				tasks[3]: compOutcome(taskapi.Success, "", FlowDefault),
			}, nil
		}).
		Context(func(_ context.Context, _ compTx, c *Completing) error {
			return errors.Join(
				c.Push(tasks[2], "beta", taskapi.Append, creation("b3")),
				c.Push(tasks[0], "beta", taskapi.Replace, creation("r1")),
				c.Push(tasks[0], "beta", taskapi.Append, creation("b1a"), creation("b1b")),
				c.Push(tasks[0], "beta", taskapi.Append),
				c.PushTagged(tasks[2], "alpha", taskapi.Supersede, tagged...),
				c.Join(tasks[0], "gamma", taskapi.Eternal, []string{"g1", "g2"}),
				c.Join(tasks[2], "gamma", taskapi.Singular, []string{"g3"}),
				c.Join(tasks[0], "alpha", taskapi.Singular, []string{"j1"}),
				c.Push(tasks[1], "delta", taskapi.Append, creation("d2")),
				c.Join(tasks[1], "epsilon", taskapi.Singular, []string{"e2"}),
				c.Push(tasks[3], "zeta", taskapi.Append, creation("z4")),
				c.Push(tasks[0], "empty", taskapi.Delete),
			)
		}).
		Context(func(_ context.Context, _ compTx, c *Completing) error {
			refused = append(refused,
				c.Push(taskapi.Task{Sequence: 99}, "beta", taskapi.Append, creation("x")),
				c.Push(tasks[0], "", taskapi.Append, creation("x")),
				c.Push(tasks[0], "beta", taskapi.Insertion(9), creation("x")),
				c.Join(tasks[0], "gamma", taskapi.Junction(5), []string{"x"}),
				c.Join(taskapi.Task{Sequence: 99}, "gamma", taskapi.Singular, []string{"x"}),
			)
			// Task 4 fails after its follow-up was registered: none is written.
			return c.Merge(tasks[3], compDecision(taskapi.Suspension, "later"))
		})
	b, s := compBatch(tasks...)
	compRunOK(t, compHandler(t, c), b, s)
	for i, err := range refused {
		if !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("refused call %d: %v, want ErrInvalidArgument", i, err)
		}
	}
	want := []compCall{
		{Op: "push", Topic: "alpha", Mode: "SUPERSEDE", Creations: []taskapi.Creation{{Identifier: "a3", Reference: "3"}}},
		{Op: "push", Topic: "beta", Mode: "APPEND", Creations: []taskapi.Creation{creation("b1a"), creation("b1b"), creation("b3")}},
		{Op: "push", Topic: "beta", Mode: "REPLACE", Creations: []taskapi.Creation{creation("r1")}},
		{Op: "join", Topic: "alpha", Mode: "SINGULAR", Groups: [][]string{{"j1"}}},
		{Op: "join", Topic: "gamma", Mode: "SINGULAR", Groups: [][]string{{"g3"}}},
		{Op: "join", Topic: "gamma", Mode: "ETERNAL", Groups: [][]string{{"g1", "g2"}}},
	}
	if got := fmt.Sprint(s.calls); got != fmt.Sprint(want) {
		t.Errorf("follow-ups:\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(s.resumed, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("resumed %v, want [alpha beta gamma]", s.resumed)
	}
	if tagged[0].Reference != "mine" {
		t.Errorf("PushTagged changed the caller's creation: %v", tagged[0])
	}
}

func TestCompositeNoFollowUpWithoutSuccess(t *testing.T) {
	tasks := compTasks(2)
	c := NewComposite[compTx]().
		Step("fail", compAll(compOutcome(taskapi.Failure, "", FlowDefault))).
		Context(func(_ context.Context, _ compTx, c *Completing) error {
			return errors.Join(
				c.Push(tasks[0], "next", taskapi.Append, taskapi.Creation{Identifier: "n"}),
				c.Join(tasks[1], "next", taskapi.Singular, []string{"n"}),
			)
		})
	b, s := compBatch(tasks...)
	b.repo = nil // no repository is needed when nothing is written
	compRunOK(t, compHandler(t, c), b, s)
	if len(s.calls) != 0 || len(s.resumed) != 0 {
		t.Errorf("calls %v, resumed %v; want none", s.calls, s.resumed)
	}
}

func TestCompositeCompletionErrorFailsTheBatch(t *testing.T) {
	tasks := compTasks(2)
	push := func(_ context.Context, _ compTx, c *Completing) error {
		return c.Push(tasks[0], "next", taskapi.Append, taskapi.Creation{Identifier: "n"})
	}
	for _, tc := range []struct {
		name    string
		context ContextFunc[compTx]
		repo    any
		want    string
	}{
		{"error", func(context.Context, compTx, *Completing) error { return errors.New("ledger down") }, compRepo{}, "ledger down"},
		{"panic", func(context.Context, compTx, *Completing) error { panic("ledger on fire") }, compRepo{}, "panic: ledger on fire"},
		{"push fails", push, compRepo{pushErr: errors.New("disk full")}, "disk full"},
		{"no repository", push, "not a repository", "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewComposite[compTx]().Context(push).Context(tc.context)
			b, s := compBatch(tasks...)
			b.repo = tc.repo
			if err := compRun(t, compHandler(t, c), b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Handle: %v, want an error with %q", err, tc.want)
			}
			if s.how != "failed" || s.cause == nil || !strings.Contains(s.cause.Error(), tc.want) {
				t.Errorf("batch %s with cause %v, want failed with %q", s.how, s.cause, tc.want)
			}
			if len(s.calls) != 0 || s.decisions != nil {
				t.Errorf("a failed completion recorded calls %v, decisions %v", s.calls, s.decisions)
			}
		})
	}
}

func TestCompositeDeduplicate(t *testing.T) {
	x5, y2, x1, z6, x3 := taskapi.Task{Sequence: 5, Identifier: "x"}, taskapi.Task{Sequence: 2, Identifier: "y"},
		taskapi.Task{Sequence: 1, Identifier: "x"}, taskapi.Task{Sequence: 6, Identifier: "z"}, taskapi.Task{Sequence: 3, Identifier: "x"}
	tasks := []taskapi.Task{x5, y2, x1, z6, x3}
	success := compDecision(taskapi.Success, "")
	for _, tc := range []struct {
		mode  DuplicateMode
		given []taskapi.Task
		want  Decisions
	}{
		{KeepNewest, []taskapi.Task{x5, y2, z6}, Decisions{
			x5: success, y2: success, z6: success,
			x1: compDecision(taskapi.Filter, "duplicate of task 5"), x3: compDecision(taskapi.Filter, "duplicate of task 5"),
		}},
		{FailDuplicates, []taskapi.Task{y2, z6}, Decisions{
			y2: success, z6: success,
			x1: compDecision(taskapi.Failure, "duplicate identifier in the batch"),
			x3: compDecision(taskapi.Failure, "duplicate identifier in the batch"),
			x5: compDecision(taskapi.Failure, "duplicate identifier in the batch"),
		}},
	} {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			var r compRecorder
			c := NewComposite[compTx]().Deduplicate(tc.mode).Step("step", r.step("step", compOutcome(taskapi.Success, "", FlowDefault)))
			b, s := compBatch(tasks...)
			compRunOK(t, compHandler(t, c), b, s)
			if !slices.Equal(r.given["step"], tc.given) {
				t.Errorf("the step got %v, want %v", r.given["step"], tc.given)
			}
			checkDecisions(t, s, tc.want)
		})
	}
}

func TestCompositeSubset(t *testing.T) {
	even := func(task taskapi.Task) bool { return task.Sequence%2 == 0 }
	tasks := compTasks(4)
	t.Run("fallback", func(t *testing.T) {
		var r compRecorder
		c := NewComposite[compTx]().
			Subset("subset", even, r.step("even", compOutcome(taskapi.Success, "even", FlowDefault)), r.step("odd", compOutcome(taskapi.Filter, "odd", FlowDefault))).
			Step("after", r.step("after", compOutcome(taskapi.Success, "", FlowDefault)), "subset")
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		for step, want := range map[string][]int64{"even": {2, 4}, "odd": {1, 3}, "after": {2, 4}} {
			if got := r.sequences(step); !slices.Equal(got, want) {
				t.Errorf("%s got %v, want %v", step, got, want)
			}
		}
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Filter, "odd"), tasks[1]: compDecision(taskapi.Success, "even"),
			tasks[2]: compDecision(taskapi.Filter, "odd"), tasks[3]: compDecision(taskapi.Success, "even"),
		})
	})
	t.Run("no fallback", func(t *testing.T) {
		var r compRecorder
		c := NewComposite[compTx]().
			Subset("subset", even, func(_ context.Context, got []taskapi.Task, _ *Supplement) (Outcomes, error) {
				r.record("even", got...)
				return Outcomes{tasks[1]: compOutcome(taskapi.Success, "even", FlowDefault)}, nil
			}, nil).
			Step("after", r.step("after", compOutcome(taskapi.Success, "", FlowDefault)), "subset")
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		for step, want := range map[string][]int64{"even": {2, 4}, "after": {1, 2, 3}} {
			if got := r.sequences(step); !slices.Equal(got, want) {
				t.Errorf("%s got %v, want %v", step, got, want)
			}
		}
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Success, ""), tasks[1]: compDecision(taskapi.Success, "even"),
			tasks[2]: compDecision(taskapi.Success, ""), tasks[3]: compDecision(taskapi.Failure, "no decision from step subset"),
		})
	})
	t.Run("errors stay in their part", func(t *testing.T) {
		c := NewComposite[compTx]().
			Subset("subset", even, func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				return nil, errors.New("even broke")
			}, compAll(compOutcome(taskapi.Success, "odd", FlowDefault)))
		b, s := compBatch(tasks...)
		compRunOK(t, compHandler(t, c), b, s)
		checkDecisions(t, s, Decisions{
			tasks[0]: compDecision(taskapi.Success, "odd"), tasks[1]: compDecision(taskapi.Failure, "even broke"),
			tasks[2]: compDecision(taskapi.Success, "odd"), tasks[3]: compDecision(taskapi.Failure, "even broke"),
		})
	})
	t.Run("a decision for the other part", func(t *testing.T) {
		c := NewComposite[compTx]().
			Subset("subset", even, func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				return Outcomes{tasks[0]: compOutcome(taskapi.Success, "", FlowDefault)}, nil
			}, nil)
		b, _ := compBatch(tasks...)
		if err := compRun(t, compHandler(t, c), b); err == nil || !strings.Contains(err.Error(), `step "subset" decided tasks it was not given: 1`) {
			t.Errorf("Handle: %v", err)
		}
	})
}

func TestCompositeBuildErrors(t *testing.T) {
	ok := compAll(compOutcome(taskapi.Success, "", FlowDefault))
	each := compEach(func(taskapi.Task) (Outcome, error) { return Outcome{}, nil })
	all := func(taskapi.Task) bool { return true }
	for _, tc := range []struct {
		name  string
		build func(c *Composite[compTx])
		want  string
	}{
		{"duplicate name", func(c *Composite[compTx]) { c.Step("a", ok).Each("a", each) }, `"a" registered twice`},
		{"unknown dependency", func(c *Composite[compTx]) { c.Step("a", ok).Step("b", ok, "a", "nope") }, `"nope"`},
		{"dependency registered later", func(c *Composite[compTx]) { c.Step("c", ok, "d").Step("d", ok) }, `"d"`},
		{"itself", func(c *Composite[compTx]) { c.Step("e", ok, "e") }, `"e"`},
		{"empty name", func(c *Composite[compTx]) { c.Step("", ok) }, "without a name"},
		{"nil step", func(c *Composite[compTx]) { c.Step("a", nil) }, `"a" is nil`},
		{"nil each", func(c *Composite[compTx]) { c.Each("a", nil) }, `"a" is nil`},
		{"nil match", func(c *Composite[compTx]) { c.Subset("a", nil, ok, ok) }, `"a"`},
		{"nil subset step", func(c *Composite[compTx]) { c.Subset("a", all, nil, ok) }, `"a"`},
		{"nil context", func(c *Composite[compTx]) { c.Context(nil) }, "nil context"},
		{"duplicate mode", func(c *Composite[compTx]) { c.Deduplicate(0) }, "duplicate mode 0"},
		{"the first mistake", func(c *Composite[compTx]) { c.Step("x", ok, "first").Step("x", ok).Step("", ok) }, `"first"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewComposite[compTx]()
			tc.build(c)
			h, err := c.Handler()
			if h != nil || !errors.Is(err, taskapi.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Handler: %v, %v; want an ErrInvalidArgument with %q", h, err, tc.want)
			}
		})
	}
}

func TestCompositeContextEnded(t *testing.T) {
	forConcurrencies(t, func(t *testing.T, n int) {
		tasks := compTasks(6)
		var later atomic.Int32
		started := make(chan struct{})
		var once sync.Once
		c := NewComposite[compTx](WithConcurrency(n)).
			Each("slow", func(ctx context.Context, _ taskapi.Task, _ *Supplement) (Outcome, error) {
				once.Do(func() { close(started) })
				select {
				case <-ctx.Done():
					return Outcome{}, ctx.Err()
				case <-time.After(compPatience):
					return Outcome{}, errors.New("the context never ended")
				}
			}).
			Step("later", func(context.Context, []taskapi.Task, *Supplement) (Outcomes, error) {
				later.Add(1)
				return nil, nil
			}, "slow").
			Context(func(context.Context, compTx, *Completing) error {
				later.Add(1)
				return nil
			})
		b, s := compBatch(tasks...)
		go func() {
			select {
			case <-started:
				b.cancel(errors.New("the runtime gave up"))
			case <-time.After(compPatience):
			}
		}()
		err := compRun(t, compHandler(t, c), b)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Handle: %v, want context.Canceled", err)
		}
		if s.how != "released" {
			t.Errorf("batch %s, want released", s.how)
		}
		if later.Load() != 0 {
			t.Errorf("a step or context ran after the context ended")
		}
	})
}

func TestCompositeHandlerServesConcurrentBatches(t *testing.T) {
	key := NewKey[int64]("first")
	h := compHandler(t, NewComposite[compTx](WithConcurrency(2)).
		Step("put", func(ctx context.Context, got []taskapi.Task, s *Supplement) (Outcomes, error) {
			if err := key.Put(s, got[0].Sequence); err != nil {
				return nil, err
			}
			return compAll(compOutcome(taskapi.Success, "", FlowDefault))(ctx, got, s)
		}).
		Each("get", func(_ context.Context, task taskapi.Task, s *Supplement) (Outcome, error) {
			first, _ := key.Get(s)
			return compOutcome(taskapi.Success, fmt.Sprint(first), FlowDefault), nil
		}, "put"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			tasks := []taskapi.Task{{Sequence: int64(10*i + 1), Identifier: "a"}, {Sequence: int64(10*i + 2), Identifier: "b"}}
			b, s := compBatch(tasks...)
			if err := handle(h, b.ctx, b); err != nil {
				t.Errorf("batch %d: %v", i, err)
				return
			}
			want := compDecision(taskapi.Success, fmt.Sprint(tasks[0].Sequence))
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, task := range tasks {
				if s.decisions[task] != want {
					t.Errorf("batch %d, task %d: %v, want %v", i, task.Sequence, s.decisions[task], want)
				}
			}
		})
	}
	wg.Wait()
}
