package taskproc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// cleanupTimeout bounds a failure or a release that runs once the batch's
// context has ended (at stop) or its completion failed.
const cleanupTimeout = 10 * time.Second

// noDecision is the output of a task that its completion did not decide.
const noDecision = "taskproc: no decision for the task"

// batchSettler settles the batches of one run of a Manager, with the
// repository that polled them.
type batchSettler[Tx any] struct {
	m    *Manager[Tx]
	r    *run
	repo Repository[Tx]
	slot func()
}

func (s *batchSettler[Tx]) accepts(completion any) bool {
	_, ok := completion.(func(context.Context, Tx) (Decisions, error))
	return ok
}

// complete runs completion and records its decisions in one transaction.
// When that fails, the batch is failed, or released when the runtime gave
// up on it.
func (s *batchSettler[Tx]) complete(b *Batch, completion any) error {
	var (
		decided Decisions
		later   bool // tasks were retried or snoozed
	)
	written, err := s.attempt(b.ctx, b.tasks, func(ctx context.Context, tx Tx, tasks []taskapi.Task) error {
		b.after, b.live = nil, tasks
		d, err := runCompletion(ctx, tx, completion)
		if err != nil {
			return err
		}
		completions, err := completionsOf(b.tasks, tasks, d)
		if err != nil {
			return err
		}
		marked := b.markedTasks(tasks)
		later = len(marked) > 0
		completions = slices.DeleteFunc(completions, func(c taskapi.Completion) bool { _, ok := marked[c.Task]; return ok })
		if err := s.repo.Complete(ctx, tx, b.topic, completions...); err != nil {
			return err
		}
		retried, err := s.later(ctx, tx, b.topic, marked)
		decided = decisionsOf(append(completions, retried...))
		return err
	})
	if err == nil {
		if later {
			s.m.due.touch() // the next due time may be theirs
		}
		s.finish(b, "completed", Event{Kind: EventCompleted, Tasks: written, Decisions: decided})
		s.m.resume(b.after)
		return nil
	}
	err = fmt.Errorf("taskproc: complete a batch of %q: %w", b.topic, err)
	if b.ctx.Err() != nil {
		return errors.Join(err, s.releaseTasks(b, written))
	}
	return errors.Join(err, s.failTasks(b, written, err))
}

// fail completes the batch's tasks with Failure, or retries or snoozes
// them when cause says so.
func (s *batchSettler[Tx]) fail(b *Batch, cause error) error {
	if a, ok := afterwardsOf(cause); ok {
		for _, task := range b.tasks {
			b.marked.Store(task, a)
		}
		return s.complete(b, func(context.Context) (Decisions, error) { return nil, nil })
	}
	return s.failTasks(b, b.tasks, cause)
}

// release gives the batch's tasks back as Ready.
func (s *batchSettler[Tx]) release(b *Batch) error {
	return s.releaseTasks(b, b.tasks)
}

// abandon gives up the batch without a write: its tasks stay Active under
// the owner that polled them, for expiry.
func (s *batchSettler[Tx]) abandon(b *Batch, cause error) error {
	b.cancel(cause)
	s.m.mu.Lock()
	s.m.abandoned = append(s.m.abandoned, b.tasks...)
	s.m.mu.Unlock()
	s.finish(b, "abandoned: "+cause.Error(), Event{Kind: EventAbandoned, Tasks: b.tasks, Err: cause})
	return nil
}

// failTasks completes tasks with Failure and cause's text in a transaction of
// its own. When that fails too, the tasks stay Active for expiry.
func (s *batchSettler[Tx]) failTasks(b *Batch, tasks []taskapi.Task, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), cleanupTimeout)
	defer cancel()
	written, err := s.attempt(ctx, tasks, func(ctx context.Context, tx Tx, tasks []taskapi.Task) error {
		return s.repo.Complete(ctx, tx, b.topic, failures(tasks, cause)...)
	})
	if err != nil {
		written = nil
		s.m.giveBackLater(tasks)
		err = fmt.Errorf("taskproc: fail a batch of %q (its tasks are given back as Ready when the database answers again): %w", b.topic, err)
	}
	s.finish(b, "failed", Event{Kind: EventFailed, Tasks: written, Err: errors.Join(cause, err)})
	return err
}

// releaseTasks gives tasks back as Ready in a transaction of its own.
func (s *batchSettler[Tx]) releaseTasks(b *Batch, tasks []taskapi.Task) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), cleanupTimeout)
	defer cancel()
	written, err := s.attempt(ctx, tasks, func(ctx context.Context, tx Tx, tasks []taskapi.Task) error {
		return s.repo.Release(ctx, tx, b.topic, tasks...)
	})
	if err != nil {
		s.m.giveBackLater(tasks)
		err = fmt.Errorf("taskproc: release a batch of %q (its tasks are given back as Ready when the database answers again): %w", b.topic, err)
		s.finish(b, "released", Event{Kind: EventFailed, Err: err})
		return err
	}
	s.finish(b, "released", Event{Kind: EventReleased, Tasks: written})
	return nil
}

// attempt runs write for tasks in a transaction, again after a conflict and
// again without the tasks that a StateError names (they are another
// owner's now), maxAttempts times at most. It returns the tasks it wrote.
func (s *batchSettler[Tx]) attempt(ctx context.Context, tasks []taskapi.Task, write func(ctx context.Context, tx Tx, tasks []taskapi.Task) error) ([]taskapi.Task, error) {
	b := newBackoff()
	for attempt := 1; ; attempt++ {
		if len(tasks) == 0 {
			return nil, nil
		}
		err := s.m.transact(ctx, func(tx Tx) error { return write(ctx, tx, tasks) })
		var stale *taskapi.StateError
		switch {
		case err == nil:
			return tasks, nil
		case attempt == maxAttempts:
			return tasks, err
		case errors.As(err, &stale) && errors.Is(err, taskapi.ErrNotActive):
			s.m.s.logger.Warn("taskproc: tasks of a batch are not this owner's any more", "topic", s.m.topic, "sequences", stale.Sequences)
			tasks = without(tasks, stale.Sequences)
		case !errors.Is(err, taskapi.ErrConflict):
			return tasks, err
		default:
			if b.wait(ctx) != nil {
				return tasks, err
			}
		}
	}
}

// finish marks b settled, gives its slot back and tells of it.
func (s *batchSettler[Tx]) finish(b *Batch, how string, e Event) {
	b.finish(how)
	s.slot()
	e.Topic, e.Duration = b.topic, time.Since(b.polled)
	s.m.stats.settled(e)
	s.m.s.notify(e)
	// Last: a Stop that waits for the batches in flight returns after it.
	s.m.update(func() { delete(s.r.batches, b) })
}

// runCompletion calls a completion function, turning a panic into an error.
func runCompletion[Tx any](ctx context.Context, tx Tx, completion any) (d Decisions, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	switch fn := completion.(type) {
	case func(context.Context) (Decisions, error):
		return fn(ctx)
	case func(context.Context, Tx) (Decisions, error):
		return fn(ctx, tx)
	}
	return nil, fmt.Errorf("completion of type %T: %w", completion, taskapi.ErrInvalidArgument)
}

// completionsOf pairs each of tasks with its decision from d, Failure for
// a task without one. A decision for a task that is not in all, the batch,
// is an error that names it; one for a task of all that is not in tasks
// (another owner's now) is left out.
func completionsOf(all, tasks []taskapi.Task, d Decisions) ([]taskapi.Completion, error) {
	inBatch := make(map[taskapi.Task]bool, len(all))
	for _, task := range all {
		inBatch[task] = true
	}
	var unknown []int64
	for task := range d {
		if !inBatch[task] {
			unknown = append(unknown, task.Sequence)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("decisions for tasks that are not in the batch: %s", joinSequences(unknown))
	}
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		decision, ok := d[task]
		if !ok {
			decision = taskapi.Decision{Result: taskapi.Failure, Output: noDecision}
		}
		completions[i] = taskapi.Completion{Task: task, Decision: decision}
	}
	return completions, nil
}

// decisionsOf returns the decisions of completions.
func decisionsOf(completions []taskapi.Completion) Decisions {
	d := make(Decisions, len(completions))
	for _, c := range completions {
		d[c.Task] = c.Decision
	}
	return d
}

// failures returns a Failure with cause's text for each of tasks.
func failures(tasks []taskapi.Task, cause error) []taskapi.Completion {
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: cause.Error()}}
	}
	return completions
}

// without returns tasks but those with the given sequences.
func without(tasks []taskapi.Task, sequences []int64) []taskapi.Task {
	return slices.DeleteFunc(slices.Clone(tasks), func(t taskapi.Task) bool { return slices.Contains(sequences, t.Sequence) })
}

// joinSequences lists sequences for a message.
func joinSequences(sequences []int64) string {
	parts := make([]string, len(sequences))
	for i, s := range sequences {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}
