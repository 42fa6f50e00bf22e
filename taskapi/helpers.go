package taskapi

import (
	"context"
	"time"
)

// PollOne polls a single task. It reports false when no task was ready.
func PollOne[Tx any](ctx context.Context, src Source[Tx], tx Tx, topic string, opts ...PollOption) (Task, bool, error) {
	tasks, err := src.Poll(ctx, tx, topic, 1, opts...)
	if err != nil || len(tasks) == 0 {
		return Task{}, false, err
	}
	return tasks[0], true, nil
}

// PurgeBefore purges, in the default states Failed to Cancelled, every task
// of topic created at or before t and none created after it, and returns how
// many. A repository with a PurgeBefore method of its own, as taskpg's and
// taskansi's have, does it in one statement; for others the helper resolves
// t to sequences and purges by range, and then one by one the few tasks
// whose creation times and sequences disagree (tasks of statements that ran
// side by side).
func PurgeBefore[Tx any](ctx context.Context, repo Repository[Tx], tx Tx, topic string, t time.Time) (int64, error) {
	if p, ok := repo.(interface {
		PurgeBefore(ctx context.Context, tx Tx, topic string, t time.Time) (int64, error)
	}); ok {
		return p.PurgeBefore(ctx, tx, topic, t)
	}
	last, err := repo.Resolve(ctx, tx, t, true)
	if err != nil || last == Inception {
		return 0, err
	}
	next, err := repo.Resolve(ctx, tx, t.Add(time.Microsecond), false) // the first created after t
	if err != nil {
		return 0, err
	}
	n, err := repo.Purge(ctx, tx, topic, Range{From: Inception, To: min(last, next-1)})
	if err != nil || next > last {
		return n, err
	}
	return purgeMixed(ctx, repo, tx, topic, t, Range{From: next, To: last}, n)
}

// purgeMixed purges one by one the tasks of span created at or before t,
// adding to n.
func purgeMixed[Tx any](ctx context.Context, repo Repository[Tx], tx Tx, topic string, t time.Time, span Range, n int64) (int64, error) {
	listing := Listing{States: []State{Failed, Suspended, Filtered, Succeeded, Recreated, Redundant, Cancelled}}
	for cursor := span.From - 1; ; {
		infos, err := repo.Page(ctx, tx, topic, listing, cursor, 1000, Forward)
		if err != nil || len(infos) == 0 {
			return n, err
		}
		for _, info := range infos {
			if info.Sequence > span.To {
				return n, nil
			}
			if !info.Created.After(t) {
				purged, err := repo.Purge(ctx, tx, topic, Range{From: info.Sequence, To: info.Sequence}, listing.States...)
				if n += purged; err != nil {
					return n, err
				}
			}
			cursor = info.Sequence
		}
	}
}

// PageAt pages tasks of topic from a point in time: going Forward from the
// first task created at or after t, going Backward from the last task created
// at or before t. A repository with a PageAt method of its own, as taskpg's
// and taskansi's have, reads the one topic only; for others the helper
// resolves t over every topic.
func PageAt[Tx any](ctx context.Context, repo Repository[Tx], tx Tx, topic string, listing Listing, t time.Time, size int, direction Direction) ([]Info, error) {
	if p, ok := repo.(interface {
		PageAt(ctx context.Context, tx Tx, topic string, listing Listing, t time.Time, size int, direction Direction) ([]Info, error)
	}); ok {
		return p.PageAt(ctx, tx, topic, listing, t, size, direction)
	}
	preceding := direction == Backward
	at, err := repo.Resolve(ctx, tx, t, preceding)
	if err != nil {
		return nil, err
	}
	switch {
	case preceding && at == Inception, !preceding && at == MaxSequence:
		return nil, nil
	case preceding:
		return repo.Page(ctx, tx, topic, listing, at+1, size, direction)
	default:
		return repo.Page(ctx, tx, topic, listing, at-1, size, direction)
	}
}
