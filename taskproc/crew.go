package taskproc

import (
	"slices"
	"sync"
)

// A crew is the workers of a per-task handler (Parallel, ParallelTx): at
// most n at once, one per identifier in play, each working through the
// queue of its identifier's groups of tasks in the order they came, so
// that the tasks of one identifier run one after the other across every
// batch the crew is given, while the other identifiers go on. A job alone
// (AnyOrder) queues behind no other: it takes the next free worker.
//
// A Manager gives each of its loops a crew, and runs the batches of a
// per-task handler off the loop: the loop polls again as soon as the crew
// has room (see room), not once a whole batch is settled, so that one
// identifier's long run of tasks, or one slow task, idles no other
// worker. A batch that reaches such a handler otherwise (through Buffered,
// or a HandlerFunc) gets a crew of its own, as before.
type crew struct {
	n    int // workers at most
	size int // tasks held at most, the loop's poll size; 0 for no bound
	// track is told of each worker that starts (+1) and returns (-1), so
	// that a Stop waits for them.
	track func(delta int)

	mu       sync.Mutex
	busy     int              // workers running
	lanes    map[string]*lane // the identifiers that have a worker
	waiting  []job            // jobs of identifiers without a worker, while all are busy
	reserved int              // tasks of batches polled for the crew and not given to it yet
	pending  []*Batch         // those batches, in poll order: they are given to it in that order
	held     int              // tasks of jobs given to the crew and not done
	changed  chan struct{}    // closed, and made anew, whenever the room may have grown
}

// A lane is the queue of one identifier's jobs and the worker that runs
// them. broken says that a job of it was cut short (its batch was given
// up, its task interrupted): the later ones are skipped, for their tasks
// must not run before the earlier one's, which goes back to Ready.
type lane struct {
	queue  []job
	broken bool
}

// A job is a group of tasks of one identifier, in sequence order, or a
// task alone, which needs no lane of its identifier.
type job struct {
	identifier string
	alone      bool
	tasks      int
	run        func() bool // runs the tasks; false when it was cut short
	skip       func()      // instead of run, once the lane broke
	done       func()      // last, either way
}

// newCrew returns a crew of n workers holding at most size tasks (0: no
// bound), telling track of its workers (nil: nobody).
func newCrew(n, size int, track func(delta int)) *crew {
	if track == nil {
		track = func(int) {}
	}
	return &crew{n: max(n, 1), size: size, track: track, lanes: map[string]*lane{}, changed: make(chan struct{})}
}

// room returns how many tasks the loop may poll now: as many as workers
// are free, and no more than keep the tasks it holds within its size. It
// counts the tasks reserved for batches not given to the crew yet both as
// workers and as tasks, which they may take at most.
func (c *crew) room() int {
	free := c.n - c.busy - c.reserved
	if c.size > 0 {
		free = min(free, c.size-c.held-c.reserved)
	}
	return max(free, 0)
}

// await waits until the crew has room, or done is closed (it returns 0
// then), and returns the room.
func (c *crew) await(done <-chan struct{}) int {
	for {
		c.mu.Lock()
		room, changed := c.room(), c.changed
		c.mu.Unlock()
		if room > 0 {
			return room
		}
		select {
		case <-changed:
		case <-done:
			return 0
		}
	}
}

// reserve sets aside room for the tasks of b, polled for the crew, until
// its handler gives them to the crew (submit) or it is settled (unreserve).
func (c *crew) reserve(b *Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.reserved = len(b.tasks)
	c.reserved += b.reserved
	c.pending = append(c.pending, b)
}

// unreserve gives back what is still reserved for b; nothing for a nil
// crew.
func (c *crew) unreserve(b *Batch) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.release(b)
}

// release gives back what is reserved for b, and lets the batch polled
// after it have its turn; the caller holds mu.
func (c *crew) release(b *Batch) {
	c.reserved -= b.reserved
	b.reserved = 0
	c.pending = slices.DeleteFunc(c.pending, func(p *Batch) bool { return p == b })
	c.signal()
}

// submit gives the crew the jobs of b, in place of what was reserved for
// it: each joins the lane of its identifier, or starts one on a worker of
// its own, or waits for a worker. The batches of a loop's crew run on
// goroutines of their own: b waits for its turn, once the batches polled
// before it were given to the crew or settled, so that the jobs of an
// identifier queue in sequence order.
func (c *crew) submit(b *Batch, jobs []job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for slices.Contains(c.pending, b) && c.pending[0] != b {
		changed := c.changed
		c.mu.Unlock()
		<-changed
		c.mu.Lock()
	}
	c.release(b)
	for _, j := range jobs {
		c.held += j.tasks
		switch l, ok := c.lanes[j.identifier]; {
		case ok && !j.alone:
			l.queue = append(l.queue, j)
		case c.busy < c.n:
			c.start(j)
		default:
			c.waiting = append(c.waiting, j)
		}
	}
	c.signal()
}

// start gives j a lane and a worker of its own; the caller holds mu. No
// job waits while a worker is free (next takes one whenever a lane ends),
// so that none of j's identifier waits before it.
func (c *crew) start(j job) {
	c.track(1)
	c.busy++
	go c.work(c.open(j), j)
}

// open makes the lane of j: a lane of its own for a job alone, else the
// lane of its identifier, which the waiting jobs of the identifier join, in
// order. The caller holds mu.
func (c *crew) open(j job) *lane {
	l := &lane{}
	if j.alone {
		return l
	}
	c.lanes[j.identifier] = l
	rest := c.waiting[:0]
	for _, w := range c.waiting {
		if w.identifier == j.identifier && !w.alone {
			l.queue = append(l.queue, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(c.waiting[len(rest):]) // let the moved jobs' functions go
	c.waiting = rest
	return l
}

// work runs the jobs of l, beginning with j, and then those that next
// gives it, until there is none.
func (c *crew) work(l *lane, j job) {
	defer c.track(-1)
	for {
		if l.broken {
			j.skip()
		} else if !j.run() {
			l.broken = true // only this worker reads or writes it
		}
		next, nextLane, ok := c.next(l, j)
		j.done()
		if !ok {
			return
		}
		l, j = nextLane, next
	}
}

// next counts j, a job of l, out and returns the job the worker runs next,
// with its lane: the next of l's queue, else the oldest waiting job, on a
// lane of its own; false when there is none, and the worker returns.
func (c *crew) next(l *lane, j job) (job, *lane, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	c.held -= j.tasks
	if len(l.queue) > 0 {
		next := l.queue[0]
		l.queue = l.queue[1:]
		return next, l, true
	}
	if !j.alone {
		delete(c.lanes, j.identifier)
	}
	if len(c.waiting) == 0 {
		c.busy--
		return job{}, nil, false
	}
	next := c.waiting[0]
	c.waiting = c.waiting[1:]
	return next, c.open(next), true
}

// signal wakes those that await room; the caller holds mu.
func (c *crew) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}
