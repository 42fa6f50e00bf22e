package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// fuzzBytes hands out the bytes of a fuzz input one by one, zeros once they
// run out, so that any input decodes to something.
type fuzzBytes struct {
	data []byte
	at   int
}

func (r *fuzzBytes) next() byte {
	if r.at >= len(r.data) {
		return 0
	}
	r.at++
	return r.data[r.at-1]
}

// fuzzSeverity ranks the results as documented, FAILURE > SUSPENSION >
// FILTER > SUCCESS, without relying on their ordinals.
var fuzzSeverity = map[taskapi.Result]int{taskapi.Failure: 4, taskapi.Suspension: 3, taskapi.Filter: 2, taskapi.Success: 1}

// worse is the oracle of a merge of results: the more severe of two defined
// results.
func worse(a, b taskapi.Result) taskapi.Result {
	if fuzzSeverity[b] > fuzzSeverity[a] {
		return b
	}
	return a
}

// joined is the oracle of a merge of outputs: the non-empty ones in order,
// joined by "; ".
func joined(outputs []string) string {
	return strings.Join(slices.DeleteFunc(slices.Clone(outputs), func(s string) bool { return s == "" }), "; ")
}

// FuzzMergeDecisions checks the merge of decisions of a Composite
// (mergeDecisions, and Completing.Merge that contexts call) against a
// brute-force oracle.
//
// Properties, for any sequence of up to 64 decisions with defined results
// and outputs that are empty, repeat, or hold "; " themselves:
//   - merging never panics;
//   - folding the decisions from the undecided one (SUCCESS, no output)
//     gives the most severe result (FAILURE > SUSPENSION > FILTER >
//     SUCCESS; SUCCESS when there are none) and the non-empty outputs in
//     order, joined by "; ";
//   - the undecided decision is an identity on both sides; the merge is
//     associative, and commutative in its result (outputs keep their
//     order: a's first);
//   - Completing.Merge merges the same way into the decision of each task
//     of the batch, leaves the others alone, and refuses with
//     ErrInvalidArgument, changing nothing, an undefined result or a task
//     that is not in the batch.
func FuzzMergeDecisions(f *testing.F) {
	f.Add("out", []byte{0x03, 0x07, 0x0b, 0x0f})
	f.Add("", []byte{})
	f.Add("a; b", []byte{0x05, 0x06, 0x04, 0x0d})
	f.Add("x", []byte{0x00, 0x03, 0x3f, 0xc1, 0xff, 0x83})
	f.Add("é", []byte{0x13, 0x22, 0x31, 0x40, 0x5f, 0x6e})
	f.Fuzz(func(t *testing.T, text string, data []byte) {
		data = data[:min(len(data), 64)] // enough to merge; the outputs grow with every decision
		outputs := []string{"", text, "x; y", text + "!"}
		tasks := []taskapi.Task{{Sequence: 1, Identifier: "a"}, {Sequence: 2, Identifier: "b"}, {Sequence: 3, Identifier: "a"}}
		start := Decisions{}
		for _, task := range tasks {
			start[task] = undecided
		}
		c := newCompleting(tasks, start, nil)
		var (
			all       []taskapi.Decision
			byTask    = map[taskapi.Task][]taskapi.Decision{}
			acc       = undecided
			stranger  = taskapi.Task{Sequence: 99, Identifier: "a"}
			undefined = []taskapi.Result{-1, 4, 9, taskapi.Result(int(^uint(0) >> 1))}
		)
		for i, b := range data {
			d := taskapi.Decision{Result: taskapi.Result(b & 3), Output: outputs[b>>2&3]}
			task := tasks[int(b>>4)%len(tasks)]
			if b>>6 == 3 { // an undefined result, or a stranger: refused
				before := c.Decisions()
				bad := taskapi.Decision{Result: undefined[i%len(undefined)], Output: "bad"}
				if err := c.Merge(task, bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
					t.Fatalf("Merge of result %v: %v, want ErrInvalidArgument", bad.Result, err)
				}
				if err := c.Merge(stranger, d); !errors.Is(err, taskapi.ErrInvalidArgument) {
					t.Fatalf("Merge into a task not in the batch: %v, want ErrInvalidArgument", err)
				}
				if !maps.Equal(c.Decisions(), before) {
					t.Fatalf("a refused Merge changed the decisions")
				}
			}
			if err := c.Merge(task, d); err != nil {
				t.Fatalf("Merge(%v, %v): %v", task, d, err)
			}
			byTask[task] = append(byTask[task], d)
			all = append(all, d)

			if mergeDecisions(undecided, d) != d || mergeDecisions(d, undecided) != d {
				t.Fatalf("the undecided decision is not an identity of %v", d)
			}
			if n := len(all); n >= 2 {
				a, b := all[n-2], all[n-1]
				if mergeDecisions(a, b).Result != mergeDecisions(b, a).Result {
					t.Fatalf("the result of merging %v and %v depends on their order", a, b)
				}
			}
			if n := len(all); n >= 3 {
				a, b, c := all[n-3], all[n-2], all[n-1]
				if l, r := mergeDecisions(mergeDecisions(a, b), c), mergeDecisions(a, mergeDecisions(b, c)); l != r {
					t.Fatalf("merging %v, %v, %v is not associative: %v, %v", a, b, c, l, r)
				}
			}
			acc = mergeDecisions(acc, d)
		}
		want := func(ds []taskapi.Decision) taskapi.Decision {
			result, outs := taskapi.Success, []string{}
			for _, d := range ds {
				result = worse(result, d.Result)
				outs = append(outs, d.Output)
			}
			return taskapi.Decision{Result: result, Output: joined(outs)}
		}
		if w := want(all); acc != w {
			t.Fatalf("the merge of %v = %v, want %v", all, acc, w)
		}
		got := c.Decisions()
		for _, task := range tasks {
			if w := want(byTask[task]); got[task] != w {
				t.Fatalf("Completing.Merge left task %d with %v, want %v", task.Sequence, got[task], w)
			}
		}
		if len(got) != len(tasks) {
			t.Fatalf("Completing holds %d decisions, want one for each of the %d tasks", len(got), len(tasks))
		}
	})
}

// A fuzzStep is a step of a generated Composite, and what the oracle
// expects of it.
type fuzzStep struct {
	name      string
	kind      byte   // 0 Step, 1 Each, 2 Subset
	behaviour byte   // 0–2 decide, 3 return an error, 4 panic, 5 decide a task not given too
	errResult byte   // the error: 0 plain; 1–4 a ResultError of FAILURE to SUCCESS; 5, 6 of an undefined result
	fallback  bool   // Subset: a fallback that decides the others
	deps      []int  // the steps it is registered after
	outcome   []byte // by task position: what it decides (see fuzzOutcome)
}

// fuzzFlows are the flows an outcome byte picks, one of them undefined.
var fuzzFlows = []Flow{FlowDefault, Continue, Halt, Flow(7)}

// raw returns the outcome that st gives the task at position i as it
// returns it, and whether a Step leaves the task out. Bits 0–1 are the
// result, 2–3 the flow, 4–5 the output, and 6–7 both set leave the task out
// of a Step, or give it an undefined result in an Each.
func (st *fuzzStep) raw(i int, task taskapi.Task) (Outcome, bool) {
	b := st.outcome[i]
	outputs := []string{"", st.name + " on " + strconv.FormatInt(task.Sequence, 10), "x", "y; z"}
	o := Outcome{Decision: taskapi.Decision{Result: taskapi.Result(b & 3), Output: outputs[b>>4&3]}, Flow: fuzzFlows[b>>2&3]}
	special := b>>6 == 3
	if special && st.kind == 1 {
		o.Decision.Result = 9
	}
	return o, special && st.kind != 1
}

// err returns the error st returns, as its behaviour says.
func (st *fuzzStep) err() error {
	cause := errors.New(st.name + " failed")
	switch st.errResult {
	case 0:
		return cause
	case 5:
		return fmt.Errorf("wrapped: %w", EndWith(9, cause))
	case 6:
		return EndWith(-1, cause)
	}
	return EndWith(taskapi.Result(st.errResult-1), cause)
}

// expectErr is the oracle's outcome of a step that returned err: the
// result of a ResultError in err's chain, FAILURE otherwise, or when that
// result is undefined (the repository would refuse it); err's text as
// output.
func (st *fuzzStep) expectErr() Outcome {
	result := taskapi.Failure
	if st.errResult >= 1 && st.errResult <= 4 {
		result = taskapi.Result(st.errResult - 1)
	}
	return Outcome{Decision: taskapi.Decision{Result: result, Output: st.err().Error()}}
}

// expectDecided is the oracle's outcome of a task that st decided itself,
// checked as documented: a task a Step left out fails, and so does an
// outcome with an undefined result or flow.
func (st *fuzzStep) expectDecided(i int, task taskapi.Task) Outcome {
	o, left := st.raw(i, task)
	switch {
	case left:
		return Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: "no decision from step " + st.name}}
	case o.Decision.Result < taskapi.Failure || o.Decision.Result > taskapi.Success || o.Flow < FlowDefault || o.Flow > Halt:
		output := fmt.Sprintf("step %s gave an undefined outcome: result %v, flow %d", st.name, o.Decision.Result, int(o.Flow))
		return Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}}
	}
	return o
}

// batchStep returns the BatchStep that behaves as st says for the tasks it
// is given (a Subset's fallback always decides).
func (st *fuzzStep) batchStep(position map[taskapi.Task]int, behaviour byte) BatchStep {
	return func(_ context.Context, tasks []taskapi.Task, _ *Supplement) (Outcomes, error) {
		switch behaviour {
		case 3:
			return nil, st.err()
		case 4:
			panic("boom " + st.name)
		}
		out := Outcomes{}
		for _, task := range tasks {
			if o, left := st.raw(position[task], task); !left {
				out[task] = o
			}
		}
		if behaviour == 5 {
			out[taskapi.Task{Sequence: 1 << 40, Identifier: "stranger"}] = Outcome{}
		}
		return out, nil
	}
}

// eachStep returns the EachStep that behaves as st says for each task.
func (st *fuzzStep) eachStep(position map[taskapi.Task]int) EachStep {
	return func(_ context.Context, task taskapi.Task, _ *Supplement) (Outcome, error) {
		switch st.behaviour {
		case 3:
			return Outcome{}, st.err()
		case 4:
			panic("boom " + st.name)
		}
		o, _ := st.raw(position[task], task)
		return o, nil
	}
}

// fuzzMatch is the match of every Subset: odd sequences.
func fuzzMatch(task taskapi.Task) bool { return task.Sequence%2 == 1 }

// expect runs the oracle: what st decides for the tasks in play, given in
// poll order, and whether it fails the whole batch.
func (st *fuzzStep) expect(given []taskapi.Task, position map[taskapi.Task]int) (Outcomes, bool) {
	out := Outcomes{}
	decide := func(tasks []taskapi.Task, behaviour byte) bool {
		if len(tasks) == 0 {
			return false
		}
		for _, task := range tasks {
			switch behaviour {
			case 3:
				out[task] = st.expectErr()
			case 4:
				out[task] = Outcome{Decision: taskapi.Decision{Result: taskapi.Failure, Output: "panic: boom " + st.name}}
			default:
				out[task] = st.expectDecided(position[task], task)
			}
		}
		return behaviour == 5
	}
	switch st.kind {
	case 0:
		return out, decide(given, st.behaviour)
	case 1:
		behaviour := st.behaviour
		if behaviour == 5 { // an EachStep cannot name another task
			behaviour = 0
		}
		return out, decide(given, behaviour)
	}
	var in, others []taskapi.Task
	for _, task := range given {
		if fuzzMatch(task) {
			in = append(in, task)
		} else {
			others = append(others, task)
		}
	}
	if decide(in, st.behaviour) {
		return out, true
	}
	if st.fallback {
		decide(others, 0)
	}
	return out, false
}

// FuzzComposite checks how a Composite merges the decisions of its steps,
// against an oracle that follows the documentation of Composite, Flow,
// BatchStep, EachStep, Subset and Deduplicate step by step, in
// registration order.
//
// The input generates a batch of one to six tasks (identifiers that may
// repeat), a duplicate mode, a concurrency, and up to five steps, each a
// Step, an Each or a Subset (with or without a fallback), registered after
// any earlier steps, that decides its tasks with any results, flows and
// outputs, leaves some out, gives undefined results or flows, returns an
// error (plain, or a ResultError of any result, defined or not), panics, or
// decides a task it was not given.
//
// Properties:
//   - nothing panics and Handle returns;
//   - a step gets exactly the tasks in play for it: those of the batch that
//     deduplication left, whose outcomes from the steps it depends on,
//     directly or not, let them continue (none of those outcomes is a Halt,
//     or a result other than SUCCESS with the default flow: a flow applies
//     to the decision it came with);
//   - the batch fails exactly when a step that ran decided a task it was
//     not given; otherwise it is completed and every task of the batch is
//     decided exactly once;
//   - a task's decision is the most severe of the decisions of its
//     deduplication and of every step that decided it (SUCCESS when none
//     did), with their non-empty outputs joined by "; " in registration
//     order, whatever order the steps finished in;
//   - a task a Step leaves out, an outcome with an undefined result or
//     flow, and an error or panic fail the task (FAILURE), except that a
//     ResultError with a defined result gives that result; no undefined
//     result ever reaches the decisions.
func FuzzComposite(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0, 0, 0x03, 0x00})                                     // one Step: SUCCESS, FAILURE
	f.Add([]byte{5, 0, 1, 2, 0, 1, 1, 0, 3, 0, 0, 0, 0, 0x13, 0x21, 0x32, 0x03, 0x0f, 0x1b}) // three tasks, chained steps
	f.Add([]byte{4, 0, 0, 1, 1, 1, 2, 2, 3, 9, 1, 0, 0, 0xc3, 0x07, 0x0b, 0x0f})             // a Step with a ResultError
	f.Add([]byte{3, 0, 1, 0, 1, 0, 1, 2, 4, 15, 0, 2, 0, 0, 3, 0x43, 0x87})                  // a Subset that panics
	f.Add([]byte{3, 0, 1, 2, 1, 2, 3, 0, 1, 0, 0, 0, 0x07, 0x0b, 0x05})                      // KeepNewest, then an Each
	f.Add([]byte{3, 0, 1, 2, 1, 2, 2, 3, 15, 0, 0, 0, 0x03, 0x03, 0x03, 0, 1, 0, 0, 0})      // FailDuplicates, a stray
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzBytes{data: data}
		tasks := make([]taskapi.Task, 1+int(r.next()%6))
		position := map[taskapi.Task]int{}
		seq := int64(0)
		for i := range tasks {
			seq += 1 + int64(r.next()%3)
			tasks[i] = taskapi.Task{Sequence: seq, Identifier: "id" + strconv.Itoa(int(r.next()%3))}
			position[tasks[i]] = i
		}
		mode := DuplicateMode(r.next() % 3) // 0: none
		concurrency := int(r.next() % 3)
		steps := make([]*fuzzStep, r.next()%6)
		c := NewComposite[compTx](WithConcurrency(concurrency))
		if mode != 0 {
			c.Deduplicate(mode)
		}
		var mu sync.Mutex
		given := make([][]taskapi.Task, len(steps)) // what each step got
		record := func(j int, tasks []taskapi.Task) {
			// Steps run on goroutines of their own, and an Each step's
			// tasks come one by one, on as many goroutines.
			mu.Lock()
			given[j] = append(given[j], tasks...)
			mu.Unlock()
		}
		for j := range steps {
			kind := r.next()
			st := &fuzzStep{
				name: "s" + strconv.Itoa(j), kind: kind % 3, behaviour: kind / 3 % 6,
				errResult: r.next() % 7, fallback: r.next()&1 == 1, outcome: make([]byte, len(tasks)),
			}
			mask := r.next()
			var after []string
			for i := range j {
				if mask>>i&1 == 1 {
					st.deps = append(st.deps, i)
					after = append(after, steps[i].name)
				}
			}
			for i := range st.outcome {
				st.outcome[i] = r.next()
			}
			steps[j] = st
			switch st.kind {
			case 0:
				step := st.batchStep(position, st.behaviour)
				c.Step(st.name, func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
					record(j, tasks)
					return step(ctx, tasks, s)
				}, after...)
			case 1:
				step := st.eachStep(position)
				c.Each(st.name, func(ctx context.Context, task taskapi.Task, s *Supplement) (Outcome, error) {
					record(j, []taskapi.Task{task})
					return step(ctx, task, s)
				}, after...)
			default:
				step, fallback := st.batchStep(position, st.behaviour), BatchStep(nil)
				if st.fallback {
					fallback = st.batchStep(position, 0)
				}
				recorded := func(step BatchStep) BatchStep {
					if step == nil {
						return nil
					}
					return func(ctx context.Context, tasks []taskapi.Task, s *Supplement) (Outcomes, error) {
						record(j, tasks)
						return step(ctx, tasks, s)
					}
				}
				c.Subset(st.name, fuzzMatch, recorded(step), recorded(fallback), after...)
			}
		}

		// The oracle: deduplication, then every step in registration order.
		count := map[string]int{}
		newest := map[string]taskapi.Task{}
		for _, task := range tasks {
			count[task.Identifier]++
			if task.Sequence > newest[task.Identifier].Sequence {
				newest[task.Identifier] = task
			}
		}
		decisions := map[taskapi.Task][]taskapi.Decision{}
		var left []taskapi.Task
		for _, task := range tasks {
			switch {
			case mode == 0 || count[task.Identifier] == 1:
				left = append(left, task)
			case mode == FailDuplicates:
				decisions[task] = []taskapi.Decision{{Result: taskapi.Failure, Output: "duplicate identifier in the batch"}}
			case newest[task.Identifier] == task:
				left = append(left, task)
			default:
				output := "duplicate of task " + strconv.FormatInt(newest[task.Identifier].Sequence, 10)
				decisions[task] = []taskapi.Decision{{Result: taskapi.Filter, Output: output}}
			}
		}
		outcomes := make([]Outcomes, len(steps))
		ancestors := make([][]int, len(steps))
		wantGiven := make([][]taskapi.Task, len(steps))
		batchFails := false
		for j, st := range steps {
			for _, d := range st.deps {
				ancestors[j] = append(ancestors[j], d)
				ancestors[j] = append(ancestors[j], ancestors[d]...)
			}
			slices.Sort(ancestors[j])
			ancestors[j] = slices.Compact(ancestors[j])
			var inPlay []taskapi.Task
			for _, task := range left {
				stopped := false
				for _, a := range ancestors[j] {
					o, ok := outcomes[a][task]
					stopped = stopped || ok && (o.Flow == Halt || o.Flow == FlowDefault && o.Decision.Result != taskapi.Success)
				}
				if !stopped {
					inPlay = append(inPlay, task)
				}
			}
			out, fails := st.expect(inPlay, position)
			outcomes[j], batchFails = out, batchFails || fails
			if st.kind == 2 && !st.fallback { // the others pass undecided
				inPlay = slices.DeleteFunc(inPlay, func(task taskapi.Task) bool { return !fuzzMatch(task) })
			}
			if len(inPlay) > 0 {
				wantGiven[j] = inPlay
			}
		}
		want := Decisions{}
		for _, task := range tasks {
			ds := decisions[task]
			for _, out := range outcomes {
				if o, ok := out[task]; ok {
					ds = append(ds, o.Decision)
				}
			}
			result, outputs := taskapi.Success, []string{}
			for _, d := range ds {
				result = worse(result, d.Result)
				outputs = append(outputs, d.Output)
			}
			want[task] = taskapi.Decision{Result: result, Output: joined(outputs)}
			if want[task] == (taskapi.Decision{}) { // the zero Decision says so (completionsOf)
				want[task] = taskapi.Decision{Output: zeroDecision}
			}
		}

		h, err := c.Handler()
		if err != nil {
			t.Fatalf("Handler: %v", err)
		}
		b, s := compBatch(tasks...)
		err = compRun(t, h, b)
		if batchFails {
			if err == nil || s.how != "failed" || !strings.Contains(err.Error(), "decided tasks it was not given") {
				t.Fatalf("a step decided a task it was not given, yet the batch was %s (%v)", s.how, err)
			}
			return
		}
		if err != nil || s.how != "completed" {
			t.Fatalf("the batch was %s (%v, cause %v), want it completed", s.how, err, s.cause)
		}
		for j := range steps {
			sorted := slices.SortedFunc(slices.Values(given[j]), func(a, b taskapi.Task) int { return int(a.Sequence - b.Sequence) })
			if !slices.Equal(sorted, wantGiven[j]) {
				t.Fatalf("step %s got %v, want %v", steps[j].name, given[j], wantGiven[j])
			}
		}
		if len(s.decisions) != len(tasks) {
			t.Fatalf("%d decisions for %d tasks", len(s.decisions), len(tasks))
		}
		for _, task := range tasks {
			if s.decisions[task] != want[task] {
				t.Fatalf("task %d was decided %v, want %v\nall: %v\nwant: %v", task.Sequence, s.decisions[task], want[task], s.decisions, want)
			}
		}
	})
}

// A ResultError of an undefined result fails its task, whatever handler
// decides it: the merge of a Composite would otherwise take Result(9) for
// less severe than Success, and the repository would refuse it.
func TestDecisionOfUndefinedResultFails(t *testing.T) {
	for _, r := range []taskapi.Result{-1, 4, 9} {
		err := fmt.Errorf("wrapped: %w", EndWith(r, errors.New("boom")))
		if d := decisionOf(taskapi.Decision{}, err); d != (taskapi.Decision{Result: taskapi.Failure, Output: "wrapped: boom"}) {
			t.Errorf("a ResultError of %v decides %v, want FAILURE with its text", r, d)
		}
	}
	if d := decisionOf(taskapi.Decision{}, EndWith(taskapi.Filter, errors.New("not mine"))); d.Result != taskapi.Filter {
		t.Errorf("a ResultError of FILTER decides %v", d)
	}
}
