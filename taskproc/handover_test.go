package taskproc_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// TestAHandedOverBatchStartsBeforeTheNextPoll: a loop that hands a batch
// to a Buffered worker lets the worker start it before it polls again,
// rather than building and sending its next poll first (some 50 µs of a
// task's commit → start at 100 tasks/s). On one thread of Go code the
// order is the scheduler's, not a race: without the loop's yield, the
// worker started 0 of 40 batches before the next poll.
func TestAHandedOverBatchStartsBeforeTheNextPoll(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e := newEnv(t, pgBackend)
	var polls atomic.Int64
	var polledBy sync.Map // sequence → the number of the poll that claimed it
	repo := &hooked[taskpg.DB]{fullRepo: e.repo, poll: func(poll func() ([]taskapi.Task, error)) ([]taskapi.Task, error) {
		n := polls.Add(1)
		tasks, err := poll()
		for _, task := range tasks {
			polledBy.Store(task.Sequence, n)
		}
		return tasks, err
	}}
	var first atomic.Int64 // batches whose handler started before the next poll
	handler := taskproc.Buffered(1, 1, taskproc.Sequential(func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		if n, ok := polledBy.Load(task.Sequence); ok && n.(int64) == polls.Load() {
			first.Add(1)
		}
		return taskapi.Decision{Result: taskapi.Success}, nil
	}), taskproc.ReleaseOnClose)
	m, err := taskproc.NewManager[taskpg.DB](repo, e.transact, topic, handler, taskproc.WithPause(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, m.Stop)
	e.start(m)
	const batches = 40
	for i := range batches {
		e.push(fmt.Sprint("task-", i))
		m.Resume()
		e.allIn(i+1, taskapi.Succeeded)
	}
	// The scheduler takes a goroutine from its global queue now and then
	// (1 in 61 turns) before the one a yield hands over to.
	if got := first.Load(); got < batches*3/4 {
		t.Errorf("the worker started %d of %d batches before the loop polled again, want at least %d", got, batches, batches*3/4)
	}
}
