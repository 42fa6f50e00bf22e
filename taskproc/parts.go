package taskproc

import (
	"slices"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A batch can be settled in parts, task by task (ParallelTx does): split
// takes tasks of the batch not taken yet and returns a part, a Batch of its
// own with the batch's contexts, settled as any batch is (see settle.go).
// The batch itself is settled, and gives its slot back, once every task
// was taken and every part is settled. When the runtime gives the batch up,
// the parts being settled give their tasks back as their writers see it,
// and the tasks no part took yet go back in one part of their own.

// parts is the state of a batch settled in parts.
type parts struct {
	mu      sync.Mutex
	untaken []taskapi.Task // tasks no part took yet, in poll order
	open    int            // parts taken and not settled
}

// split returns a part of b made of tasks, which no part took yet. It
// returns ErrSettled once b is settled, or given up, or when it was settled
// whole; an ErrInvalidArgument for a task that is not b's or taken
// already.
func (b *Batch) split(tasks ...taskapi.Task) (*Batch, error) {
	p, err := b.splitting()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.revoked() != nil {
		return nil, b.refusal()
	}
	for _, task := range tasks {
		if !slices.Contains(p.untaken, task) {
			return nil, notInBatch(task)
		}
	}
	p.untaken = slices.DeleteFunc(p.untaken, func(t taskapi.Task) bool { return slices.Contains(tasks, t) })
	p.open++
	return b.part(tasks), nil
}

// splitting returns b's parts, making b a batch settled in parts on the
// first call.
func (b *Batch) splitting() (*parts, error) {
	b.partsOnce.Do(func() {
		if b.state.CompareAndSwap(pending, settling) {
			b.parts = &parts{untaken: slices.Clone(b.tasks)}
		}
	})
	if b.parts == nil {
		return nil, b.refusal()
	}
	return b.parts, nil
}

// part returns a part of b made of tasks.
func (b *Batch) part(tasks []taskapi.Task) *Batch {
	return &Batch{topic: b.topic, tasks: tasks, polled: b.polled,
		ctx: b.ctx, cancel: func(error) {}, writes: b.writes, stopWrites: func(error) {},
		settler: b.settler, repo: b.repo, term: b.term, done: make(chan struct{}), parent: b}
}

// partDone counts a part of b out, and finishes b when it was the last and
// no task is left to take; it returns b then, else nil.
func (b *Batch) partDone() *Batch {
	p := b.parts
	p.mu.Lock()
	p.open--
	last := p.open == 0 && len(p.untaken) == 0
	p.mu.Unlock()
	if !last {
		return nil
	}
	return b.finish("settled task by task")
}

// revokeParts gives up the tasks of b that no part took yet, in one part
// settled as how says; the parts being settled see the revocation
// themselves.
func (b *Batch) revokeParts(how settlement) {
	p := b.parts
	p.mu.Lock()
	rest := p.untaken
	p.untaken = nil
	if len(rest) > 0 {
		p.open++
	}
	p.mu.Unlock()
	if len(rest) > 0 {
		part := b.part(rest)
		part.state.Store(settling)
		_ = b.settler.write(part, how)
	}
}

// rest settles the tasks of b that no part took, as interrupted: back to
// Ready, no attempt counted. A handler that settles in parts calls it last.
func (b *Batch) rest() {
	p, err := b.splitting()
	if err != nil {
		return
	}
	p.mu.Lock()
	rest := slices.Clone(p.untaken)
	p.mu.Unlock()
	if len(rest) == 0 {
		return
	}
	if part, err := b.split(rest...); err == nil {
		_ = part.Release()
	}
}
