package taskproc

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// later writes, in the completion's transaction, what becomes of the marked
// tasks: an interrupted task is released; a snoozed task is released and
// deferred; a retried task is
// completed with Failure and its attempt log, and, while attempts remain,
// reset to Ready in its place (ReviveReset keeps the log as its output) and
// deferred by the policy's backoff. It returns the Failure completions of
// the retried tasks.
func (s *batchSettler[Tx]) later(ctx context.Context, tx Tx, topic string, marked map[taskapi.Task]afterwards) ([]taskapi.Completion, error) {
	if len(marked) == 0 {
		return nil, nil
	}
	if err := measureClock(ctx, tx, s.repo, s.m.clock); err != nil { // to defer by the database's clock
		return nil, err
	}
	now := s.m.now()
	due := map[time.Time][]taskapi.Task{}
	var snoozed, again []taskapi.Task
	var failed []taskapi.Completion
	for _, task := range sortedBySequence(slices.Collect(maps.Keys(marked))) {
		a := marked[task]
		if a.cause == nil {
			snoozed = append(snoozed, task)
			if !a.interrupted {
				until := now.Add(a.after)
				due[until] = append(due[until], task)
			}
			continue
		}
		info, found, err := s.repo.Lookup(ctx, tx, topic, task.Sequence)
		switch {
		case err != nil:
			return nil, err
		case !found: // purged meanwhile: not this owner's any more
			return nil, &taskapi.StateError{Topic: topic, Sequences: []int64{task.Sequence}, Err: taskapi.ErrNotActive}
		}
		output, attempt := nextAttempt(info.Output, now, a.cause)
		failed = append(failed, taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}})
		if attempt < s.m.s.retry.MaxAttempts {
			again = append(again, task)
			until := now.Add(s.m.s.retry.Backoff(attempt))
			due[until] = append(due[until], task)
		}
	}
	if err := s.writeLater(ctx, tx, topic, snoozed, failed, again, due); err != nil {
		return nil, err
	}
	return failed, nil
}

// writeLater releases snoozed, completes failed, resets again, and defers
// the tasks of due to their times.
func (s *batchSettler[Tx]) writeLater(ctx context.Context, tx Tx, topic string, snoozed []taskapi.Task, failed []taskapi.Completion, again []taskapi.Task, due map[time.Time][]taskapi.Task) error {
	if len(snoozed) > 0 {
		if err := s.repo.Release(ctx, tx, topic, snoozed...); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		if err := s.repo.Complete(ctx, tx, topic, failed...); err != nil {
			return err
		}
	}
	if len(again) > 0 {
		if _, err := s.repo.ReviveTasks(ctx, tx, topic, taskapi.ReviveReset, again...); err != nil {
			return err
		}
	}
	for until, tasks := range due {
		if err := s.repo.Defer(ctx, tx, topic, until, tasks...); err != nil {
			return err
		}
	}
	return nil
}
