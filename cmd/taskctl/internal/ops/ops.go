// Package ops holds the operations on a task repository that taskctl's
// commands and its dashboard (taskctl serve) share: finding tasks by
// sequence, purging, reviving and deferring in bounded steps, and reading
// what waits in a topic. Each works through Store, a subset of the
// methods of taskctl's store, every call a transaction of its own.
package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Store is what the operations need of a repository; taskctl's store
// satisfies it.
type Store interface {
	Pager
	PageAt(ctx context.Context, topic string, listing taskapi.Listing, at time.Time, size int, direction taskapi.Direction) ([]taskapi.Info, error)
	Lookup(ctx context.Context, topic string, sequence int64) (taskapi.Info, bool, error)
	Count(ctx context.Context, snapshot taskapi.Snapshot, filter taskapi.Counting, span taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error)
	ReviveCompletedBy(ctx context.Context, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time, size int) ([]taskapi.Revival, error)
	Defer(ctx context.Context, topic string, until time.Time, tasks []taskapi.Task) error
	PurgeCompletedBy(ctx context.Context, topic string, span taskapi.Range, completedBy time.Time, states []taskapi.State) (int64, error)
	Lookups(ctx context.Context, topic string, sequences []int64) (map[int64]taskapi.Info, error)
}

// Pager pages the tasks of a topic: the one read of Store that Waiting
// needs, so that a caller may hand it a Pager that reads many topics in
// one transaction.
type Pager interface {
	Page(ctx context.Context, topic string, listing taskapi.Listing, cursor int64, size int, direction taskapi.Direction) ([]taskapi.Info, error)
}

// ErrNotFound is in the chain of the error of a task that does not exist.
var ErrNotFound = errors.New("not found")

// Batch is how many tasks one transaction of a revival or a deferral
// changes.
const Batch = 1000

// PurgedStates are the states a purge deletes when none are named: every
// finished state, FAILED to CANCELLED.
var PurgedStates = []taskapi.State{
	taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Recreated, taskapi.Redundant,
	taskapi.Cancelled,
}

// LookupTasks finds the tasks of topic with the given sequences; an
// unknown sequence is an error that names it, with ErrNotFound in its
// chain.
func LookupTasks(ctx context.Context, s Store, topic string, seqs []int64) ([]taskapi.Task, error) {
	infos, err := LookupInfos(ctx, s, topic, seqs)
	tasks := make([]taskapi.Task, len(infos))
	for i, info := range infos {
		tasks[i] = info.Task
	}
	return tasks, err
}

// LookupInfos reads the tasks of topic with the given sequences, as
// LookupTasks finds them.
func LookupInfos(ctx context.Context, s Store, topic string, seqs []int64) ([]taskapi.Info, error) {
	found, err := s.Lookups(ctx, topic, seqs)
	if err != nil {
		return nil, err
	}
	infos := make([]taskapi.Info, 0, len(seqs))
	for _, seq := range seqs {
		info, ok := found[seq]
		if !ok {
			return nil, fmt.Errorf("topic %q has no task %d: %w", topic, seq, ErrNotFound)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// ReviveAll revives every task of topic in state within span completed at
// or before completedBy (zero: whenever), Batch tasks a transaction, and
// returns the revivals: those before an error too.
func ReviveAll(ctx context.Context, s Store, topic string, how taskapi.Revivification, state taskapi.State, span taskapi.Range, completedBy time.Time) ([]taskapi.Revival, error) {
	var revived []taskapi.Revival
	for {
		batch, err := s.ReviveCompletedBy(ctx, topic, how, state, span, completedBy, Batch)
		if revived = append(revived, batch...); err != nil || len(batch) < Batch {
			return revived, err
		}
	}
}
