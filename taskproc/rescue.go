package taskproc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// rescuePage is how many expired tasks of a topic the keeper rescues per
// round.
const rescuePage = 1000

// WithRescues sets how often a task of the topic is rescued at most: revived
// by a keeper (WithRevival) after its owner stopped sending heartbeats with
// the task Active. A task that expires once more ends with Failure and an
// output that says how often it was rescued, so that a task whose handler
// kills its process (a poison task) does not kill process after process
// for ever. The default is the retry policy's MaxAttempts (WithRetry).
// Rescues are counted from the task's Revivals, less the retries its
// attempt log records (see Attempts).
func WithRescues(n int) TopicOption {
	return func(s *settings) { s.maxRescues, s.maxRescuesSet = n, true }
}

// rescue revives the Expired tasks of the Manager's topic in place
// (ReviveReset), so that the work of crashed processes resumes, but ends
// those rescued WithRescues times already with Failure. Another keeper
// doing the same at once takes some of them; those are left to it.
func (m *Manager[Tx]) rescue(ctx context.Context, repo Repository[Tx]) error {
	var page []taskapi.Info
	err := m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
		page, err = repo.Page(ctx, tx, m.topic, taskapi.Listing{States: []taskapi.State{taskapi.Expired}}, taskapi.Inception, rescuePage, taskapi.Forward)
		return err
	})
	if err != nil || len(page) == 0 {
		return err
	}
	var again []taskapi.Task
	var poison []taskapi.Assignment
	for _, info := range page {
		if n := rescues(info); n >= m.s.maxRescues {
			poison = append(poison, taskapi.Assignment{Task: info.Task, Result: taskapi.Failure, Output: poisoned(n)})
		} else {
			again = append(again, info.Task)
		}
	}
	// The write is let finish past the keeper's round: cut at that
	// deadline while its COMMIT is on the wire, it may land unknown to the
	// keeper, which would then neither count nor tell the rescue (seen on
	// a busy machine with a heartbeat of 100 ms).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cleanupTime())
	defer cancel()
	for len(again)+len(poison) > 0 {
		err = m.own.run(ctx, func(ctx context.Context, tx Tx) error {
			if len(again) > 0 {
				if _, err := repo.ReviveTasks(ctx, tx, m.topic, taskapi.ReviveReset, again...); err != nil {
					return err
				}
			}
			return repo.Reassign(ctx, tx, m.topic, poison...)
		})
		stale := staleStates(err)
		if stale == nil {
			break
		}
		again = without(again, stale)
		poison = withoutAssigned(poison, stale)
	}
	if err != nil {
		return err
	}
	if len(again) > 0 {
		m.stats.rescued.Add(int64(len(again)))
		m.s.notify(Event{Kind: EventRescued, Topic: m.topic, Tasks: again})
	}
	if len(poison) > 0 {
		tasks := make([]taskapi.Task, len(poison))
		for i, a := range poison {
			tasks[i] = a.Task
		}
		m.stats.poisoned.Add(int64(len(tasks)))
		m.s.notify(Event{Kind: EventPoisoned, Topic: m.topic, Tasks: tasks})
	}
	return nil
}

// rescues returns how often the task of info was rescued: its revivals but
// those of its retries, one per attempt its log records (a retry revives
// the task in place too).
func rescues(info taskapi.Info) int {
	attempts, _ := Attempts(info.Output)
	return max(info.Revivals-len(attempts), 0)
}

// poisoned is the output of a task given up after n rescues.
func poisoned(n int) string {
	return fmt.Sprintf("taskproc: given up: the task's owner stopped sending heartbeats while it ran, %d times after it was rescued %d times (a handler that kills its process?); see WithRescues", n+1, n)
}

// staleStates returns the sequences that err says are not in the state a
// revival or a reassignment needs any more, nil when it says nothing of
// the kind.
func staleStates(err error) []int64 {
	var stale *taskapi.StateError
	if errors.As(err, &stale) && errors.Is(err, taskapi.ErrStateMismatch) && len(stale.Sequences) > 0 {
		return stale.Sequences
	}
	return nil
}

// withoutAssigned returns assignments but those of tasks with the given
// sequences.
func withoutAssigned(assignments []taskapi.Assignment, sequences []int64) []taskapi.Assignment {
	return slices.DeleteFunc(slices.Clone(assignments), func(a taskapi.Assignment) bool { return slices.Contains(sequences, a.Task.Sequence) })
}
