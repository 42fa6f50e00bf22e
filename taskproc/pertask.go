package taskproc

import (
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A perTaskHandler decides each task of a batch on a worker of its own
// (Parallel, ParallelTx): a Manager gives each of its loops a crew of
// workers() workers for it, and runs its batches off the loop (see crew).
type perTaskHandler interface {
	workers() int
}

// A PerTaskOption configures Parallel or ParallelTx.
type PerTaskOption func(*perTask)

// AnyOrder lets the tasks of one identifier run at once, each on the next
// free worker, instead of one after the other in sequence order. Use it
// when the identifier is a key of fairness rather than of order — the
// tenant of Limits.PerIdentifier, say: else a loop runs one tenant's tasks
// on one worker at a time, and its tasks that wait for that worker hold
// their share of the topic's Active limit while they wait.
func AnyOrder() PerTaskOption { return func(p *perTask) { p.anyOrder = true } }

// perTask is what Parallel and ParallelTx share: their workers, and
// whether an identifier's tasks keep their order.
type perTask struct {
	n        int
	anyOrder bool
}

// newPerTask returns the settings of a handler of n workers (at least one).
func newPerTask(n int, opts []PerTaskOption) perTask {
	p := perTask{n: max(n, 1)}
	for _, opt := range opts {
		opt(&p)
	}
	return p
}

// workers says that a batch is decided on up to n workers.
func (p *perTask) workers() int { return p.n }

// groups returns tasks grouped by identifier in sequence order, or each
// task alone, in sequence order, with AnyOrder.
func (p *perTask) groups(tasks []taskapi.Task) [][]taskapi.Task {
	if !p.anyOrder {
		return byIdentifier(tasks)
	}
	var groups [][]taskapi.Task
	for _, task := range sortedBySequence(tasks) {
		groups = append(groups, []taskapi.Task{task})
	}
	return groups
}

// runGroups runs the tasks of b, grouped by identifier in sequence order
// (each task alone with AnyOrder), on b's crew (its loop's, or one of n
// workers of its own), and returns once every group is done. run runs a
// group and reports false when it was cut short: the later groups of its
// identifier are skipped then, for their tasks must not run before the
// one that goes back to Ready.
func (p *perTask) runGroups(b *Batch, run func([]taskapi.Task) bool, skip func([]taskapi.Task)) {
	c := b.crew
	var workers sync.WaitGroup // of a crew of the batch's own
	if c == nil {
		c = newCrew(p.n, 0, func(delta int) { workers.Add(delta) })
	}
	groups := p.groups(b.tasks)
	var done sync.WaitGroup
	done.Add(len(groups))
	jobs := make([]job, len(groups))
	for i, group := range groups {
		jobs[i] = job{identifier: group[0].Identifier, alone: p.anyOrder, tasks: len(group),
			run: func() bool { return run(group) }, skip: func() { skip(group) }, done: done.Done}
	}
	c.submit(b, jobs)
	done.Wait()
	workers.Wait()
}
