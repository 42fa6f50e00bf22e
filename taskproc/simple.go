package taskproc

import (
	"context"
	"errors"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Sequential returns a Handler that decides the tasks of each batch one after
// the other with fn, in poll order, and hands the decisions over to be
// written, returning while they are. When ctx ends (a Stop that ran out of time), it decides no more
// tasks: the tasks it decided are completed, and the others, and the one
// whose fn returned the context's error, go back to Ready, no attempt
// counted.
func Sequential(fn TaskFunc) Handler {
	return HandlerFunc(func(ctx context.Context, b *Batch) error {
		decisions := make(Decisions, len(b.tasks))
		for _, task := range b.tasks {
			if ctx.Err() != nil {
				b.marked.Store(task, interrupted)
				continue
			}
			if b.isCancelled(task) {
				continue // not decided at all; the settlement leaves it out
			}
			decisions[task] = b.decide(ctx, fn, task)
		}
		return b.handOver(decisions)
	})
}

// handOver completes b with decisions, the runtime's own handlers' (see
// Sequential and Parallel), on a goroutine of its own, so that the handler
// takes its next batch while the decisions are written, or wait in the
// settlement window (WithSettleWindow), as River's workers do while its
// completer writes their results. The Manager holds b until it is
// settled, as any batch (its limiter slot too), and the outcome reaches
// the Observer and the logger, not the handler's caller. With
// maxHandedOver tasks of the Manager's handed over and unwritten, the
// handler writes its own, so that a loop whose polls outrun the writes
// waits for them instead of claiming without bound.
func (b *Batch) handOver(decisions Decisions) error {
	handed, n := b.settler.handedOver(), int64(len(b.tasks))
	if handed == nil || handed.Add(n) > maxHandedOver {
		if handed != nil {
			handed.Add(-n)
		}
		return b.Complete(decisions)
	}
	go func() {
		defer handed.Add(-n)
		_ = b.Complete(decisions)
	}()
	return nil
}

// maxHandedOver is the most tasks a Manager has handed over and not
// written (see handOver): half a group, so that a window of small batches
// holds a loop back only past what a window of 250 ms gathers at 1,000
// tasks/s.
const maxHandedOver = maxGathered / 2

// Parallel returns a Handler that decides the tasks of each batch with fn
// on up to n goroutines, and hands the decisions over to be written, as
// Sequential does. Tasks
// with the same identifier are decided one after the other in sequence
// order, also across the batches of one poll loop, while the other
// identifiers go on: one slow identifier holds up no other. Its Manager
// polls again whenever a worker is free (see WithPollers), not once a
// whole batch is settled. n below one is one. When ctx ends, it decides no
// more tasks, as Sequential does. AnyOrder drops the order of an
// identifier's tasks.
func Parallel(n int, fn TaskFunc, opts ...PerTaskOption) Handler {
	return &parallel{perTask: newPerTask(n, opts), fn: fn}
}

// parallel is the Handler of Parallel.
type parallel struct {
	perTask
	fn TaskFunc
}

// Handle decides the tasks of b on the workers and completes b.
func (h *parallel) Handle(ctx context.Context, b *Batch) error {
	var (
		mu        sync.Mutex
		decisions = make(Decisions, len(b.tasks))
	)
	h.runGroups(b, func(group []taskapi.Task) bool {
		whole := true
		for _, task := range group {
			if ctx.Err() != nil {
				b.marked.Store(task, interrupted)
				whole = false
				continue
			}
			if b.isCancelled(task) {
				continue
			}
			d := b.decide(ctx, h.fn, task)
			if a, ok := b.marked.Load(task); ok && a.(afterwards).interrupted && !b.isCancelled(task) {
				whole = false // it goes back to Ready: the identifier's later tasks must wait
			}
			mu.Lock()
			decisions[task] = d
			mu.Unlock()
		}
		return whole
	}, func(group []taskapi.Task) {
		for _, task := range group {
			b.marked.Store(task, interrupted)
		}
	})
	return b.handOver(decisions)
}

// decide decides task with fn, and marks it for a retry or a snooze when
// fn's error asks for one, or as interrupted when fn returned the error of
// its context, which ended.
func (b *Batch) decide(ctx context.Context, fn TaskFunc, task taskapi.Task) taskapi.Decision {
	ctx, done := b.taskContext(ctx, task)
	defer done()
	d, err := decide(ctx, fn, task)
	if a, ok := afterwardsOf(err); ok {
		b.marked.Store(task, a)
	} else if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		b.marked.Store(task, interrupted)
	}
	return decisionOf(d, err)
}

// byIdentifier groups tasks by identifier, each group in ascending sequence,
// the groups in the order of their first task.
func byIdentifier(tasks []taskapi.Task) [][]taskapi.Task {
	index := map[string]int{}
	var groups [][]taskapi.Task
	for _, task := range sortedBySequence(tasks) {
		i, ok := index[task.Identifier]
		if !ok {
			i = len(groups)
			index[task.Identifier] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], task)
	}
	return groups
}
