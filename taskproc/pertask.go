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

// runGroups runs the tasks of b, grouped by identifier in sequence order,
// on b's crew (its loop's, or one of n workers of its own), and returns
// once every group is done. run runs a group and reports false when it was
// cut short: the later groups of its identifier are skipped then, for
// their tasks must not run before the one that goes back to Ready.
func runGroups(b *Batch, n int, run func([]taskapi.Task) bool, skip func([]taskapi.Task)) {
	c := b.crew
	var workers sync.WaitGroup // of a crew of the batch's own
	if c == nil {
		c = newCrew(n, 0, func(delta int) { workers.Add(delta) })
	}
	groups := byIdentifier(b.tasks)
	var done sync.WaitGroup
	done.Add(len(groups))
	jobs := make([]job, len(groups))
	for i, group := range groups {
		jobs[i] = job{identifier: group[0].Identifier, tasks: len(group),
			run: func() bool { return run(group) }, skip: func() { skip(group) }, done: done.Done}
	}
	c.submit(b, jobs)
	done.Wait()
	workers.Wait()
}
