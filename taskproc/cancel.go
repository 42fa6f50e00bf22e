package taskproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Cancellation of tasks in flight (taskapi.Canceller). A cancelled task is
// Cancelled in the database at once; the owner running it learns of it at
// its next reconciliation (WithReconcile), and at once on PostgreSQL, where
// the cancellation notifies the topic's control channel that the Notifier
// hears. The runtime then ends the work on the task:
//
//   - under Sequential, Parallel and ParallelTx, each task is decided on a
//     context of its own, which ends with a cause that wraps
//     taskapi.ErrCancelled; the other tasks of the batch go on. A task not
//     decided yet is not decided at all;
//   - under any other Handler, the batch's context ends with that cause:
//     a Handler of whole batches cannot be interrupted for one task;
//   - whatever the handler decides for the task afterwards is not written:
//     its settlement leaves the task out, Batch.Tasks no longer lists it,
//     and the task's one result stays Cancelled. A handler that ignores the
//     cancellation and succeeds has its success dropped, and what its
//     completion's transaction wrote for the task (CompleteTx, ParallelTx,
//     a Composite's contexts) rolls back with it; only the effects it had
//     outside the database stay. A completion function that decides a task
//     known to be cancelled before it ran commits nothing (see
//     decidedCancelled). A settlement of a batch whose tasks were all
//     cancelled writes nothing and returns an error that wraps
//     taskapi.ErrCancelled.
//
// The database is the judge: a completion that reaches it before the owner
// has heard of the cancellation is refused for the task (taskapi.ErrNotActive),
// as for a task that another owner took.

// cancelledCause is the cause of the context of a cancelled task.
func cancelledCause(topic string, sequence int64) error {
	return fmt.Errorf("taskproc: task %d of %q was cancelled: %w", sequence, topic, taskapi.ErrCancelled)
}

// cancellations looks for cancelled tasks among the batches in flight of
// the Managers of topics (all for none), and ends the work on them.
func (c *Client[Tx]) cancellations(ctx context.Context, topics []string, managers map[string]*Manager[Tx]) error {
	if len(topics) == 0 {
		topics = slices.Collect(maps.Keys(managers))
	}
	var errs []error
	for _, topic := range topics {
		if m := managers[topic]; m != nil {
			errs = append(errs, m.cancellations(ctx))
		}
	}
	return errors.Join(errs...)
}

// cancellations asks the repository which tasks of the Manager's batches in
// flight were cancelled, when it is a Canceller, and ends the work on them.
func (m *Manager[Tx]) cancellations(ctx context.Context) error {
	canceller, ok := m.repository().(taskapi.Canceller[Tx])
	if !ok {
		return nil
	}
	flying := map[int64]*Batch{}
	for _, b := range m.inFlight() {
		for _, task := range b.tasks {
			if !b.isCancelled(task) {
				flying[task.Sequence] = b
			}
		}
	}
	if len(flying) == 0 {
		return nil
	}
	found, err := m.readCancelled(ctx, canceller, slices.Sorted(maps.Keys(flying)))
	if err != nil {
		return fmt.Errorf("taskproc: read the cancelled tasks of %q: %w", m.topic, err)
	}
	m.endCancelled(found, func(sequence int64) *Batch { return flying[sequence] })
	return nil
}

// cancelledAmong asks which of sequences, tasks of b whose settlement the
// database refused as not this owner's, were cancelled, ends the work on
// them, and returns how many were. A settlement learns so of a
// cancellation that came before the reconciliation that would have told;
// when the read fails, the tasks are taken as another owner's.
func (m *Manager[Tx]) cancelledAmong(b *Batch, sequences []int64) int {
	canceller, ok := m.repository().(taskapi.Canceller[Tx])
	if !ok {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.writes), m.cleanupTime())
	defer cancel()
	found, err := m.readCancelled(ctx, canceller, sequences)
	if err != nil {
		return 0
	}
	m.endCancelled(found, func(int64) *Batch { return b.root() })
	return len(found)
}

// readCancelled returns which of sequences are Cancelled.
func (m *Manager[Tx]) readCancelled(ctx context.Context, canceller taskapi.Canceller[Tx], sequences []int64) ([]int64, error) {
	var found []int64
	err := retryConflicts(ctx, func() error {
		return m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
			found, err = canceller.Cancelled(ctx, tx, m.topic, sequences...)
			return err
		})
	})
	return found, err
}

// endCancelled ends the work on the cancelled tasks found, each in the
// batch that batchOf returns, and tells of those it learnt of now.
func (m *Manager[Tx]) endCancelled(found []int64, batchOf func(sequence int64) *Batch) {
	var cancelled []taskapi.Task
	for _, sequence := range found {
		if b := batchOf(sequence); b != nil {
			if task, ok := b.cancelTask(sequence, cancelledCause(m.topic, sequence)); ok {
				cancelled = append(cancelled, task)
			}
		}
	}
	if len(cancelled) > 0 {
		m.stats.cancelled.Add(int64(len(cancelled)))
		m.s.notify(Event{Kind: EventCancelled, Topic: m.topic, Tasks: cancelled})
	}
}

// cancelTask ends the work on the task of b with sequence, which was
// cancelled, for cause; it returns the task, and false when it knew already.
func (b *Batch) cancelTask(sequence int64, cause error) (taskapi.Task, bool) {
	i := slices.IndexFunc(b.tasks, func(t taskapi.Task) bool { return t.Sequence == sequence })
	if i < 0 {
		return taskapi.Task{}, false
	}
	if _, known := b.cancelled.LoadOrStore(sequence, cause); known {
		return taskapi.Task{}, false
	}
	if !b.perTask.Load() {
		b.cancel(cause)
	} else if stop, ok := b.running.Load(sequence); ok {
		stop.(context.CancelCauseFunc)(cause)
	}
	return b.tasks[i], true
}

// taskContext returns the context on which task of b is decided, which
// ends with the cause of the task's cancellation, and the function that
// lets it go once the task is decided. It makes b a batch decided task by
// task: a cancellation ends only the task's context.
func (b *Batch) taskContext(ctx context.Context, task taskapi.Task) (context.Context, func()) {
	root := b.root()
	root.perTask.Store(true)
	ctx, stop := context.WithCancelCause(ctx)
	root.running.Store(task.Sequence, stop)
	if cause, ok := root.cancelled.Load(task.Sequence); ok { // cancelled before it began
		stop(cause.(error))
	}
	return ctx, func() {
		root.running.Delete(task.Sequence)
		stop(nil)
	}
}

// isCancelled reports whether the runtime learnt that task was cancelled.
func (b *Batch) isCancelled(task taskapi.Task) bool {
	_, ok := b.root().cancelled.Load(task.Sequence)
	return ok
}

// withoutCancelled returns the tasks of live that were not cancelled.
func (b *Batch) withoutCancelled(live []taskapi.Task) []taskapi.Task {
	if !slices.ContainsFunc(live, b.isCancelled) {
		return live
	}
	return slices.DeleteFunc(slices.Clone(live), b.isCancelled)
}

// root returns the batch of the poll that b is a part of, or b.
func (b *Batch) root() *Batch {
	if b.parent != nil {
		return b.parent
	}
	return b
}
