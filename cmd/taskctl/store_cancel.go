package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// taskpg's repository cancels; when taskansi's does too, Canceller joins
// the interface repository and canceller goes.
var _ taskapi.Canceller[taskpg.DB] = (*taskpg.Repository)(nil)

// errCannotCancel is the error of a cancellation on a repository that
// has no taskapi.Canceller.
var errCannotCancel = errors.New("this database's repository cannot cancel tasks (it has no taskapi.Canceller)")

// canceller returns the Canceller of b's repository: taskpg has one;
// taskansi's comes later, and until then a cancellation on SQLite or
// MySQL fails with errCannotCancel and changes nothing.
func (b *backend[Tx]) canceller() (taskapi.Canceller[Tx], error) {
	if c, ok := any(b.repo).(taskapi.Canceller[Tx]); ok {
		return c, nil
	}
	return nil, errCannotCancel
}

// CanCancel says whether b's repository is a taskapi.Canceller.
func (b *backend[Tx]) CanCancel() bool {
	_, err := b.canceller()
	return err == nil
}

// Cancel cancels the tasks of topic with the given sequences that are
// READY or ACTIVE, and returns them.
func (b *backend[Tx]) Cancel(ctx context.Context, topic, reason string, sequences []int64) ([]taskapi.Cancellation, error) {
	c, err := b.canceller()
	if err != nil {
		return nil, err
	}
	return in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) { return c.Cancel(ctx, tx, topic, reason, sequences...) })
}

// CancelIdentifier cancels every READY task of identifier in topic, and
// returns them.
func (b *backend[Tx]) CancelIdentifier(ctx context.Context, topic, identifier, reason string) ([]taskapi.Cancellation, error) {
	c, err := b.canceller()
	if err != nil {
		return nil, err
	}
	return in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) {
		return c.CancelIdentifier(ctx, tx, topic, identifier, reason)
	})
}

// errUnconfirmed rolls back a cancellation that met tasks in another
// state than confirmed.
type errUnconfirmed struct{ moved []int64 }

func (e *errUnconfirmed) Error() string { return fmt.Sprintf("tasks %v are not as confirmed", e.moved) }

// CancelIn cancels the tasks of topic named by confirmed that are, as
// they are cancelled, in the state confirmed gives for them (READY or
// ACTIVE), and returns them; a task in another state is left as it is.
// Canceller.Cancel takes a READY task and an ACTIVE one alike, and a
// task READY when it was confirmed may have been polled since: CancelIn
// cancels in a transaction that it rolls back when a task was cancelled
// from another state than confirmed (a cancelled READY task has no
// owner), and cancels the others again without it. The dashboard's
// cancellations so never change more than their confirmation showed.
func (b *backend[Tx]) CancelIn(ctx context.Context, topic, reason string, confirmed map[int64]taskapi.State) ([]taskapi.Cancellation, error) {
	c, err := b.canceller()
	if err != nil {
		return nil, err
	}
	seqs := make([]int64, 0, len(confirmed))
	for seq := range confirmed {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for len(seqs) > 0 {
		cancelled, err := in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) {
			cancelled, err := c.Cancel(ctx, tx, topic, reason, seqs...)
			if err != nil {
				return nil, err
			}
			var moved []int64
			for _, cl := range cancelled {
				if cancelledFrom(cl) != confirmed[cl.Task.Sequence] {
					moved = append(moved, cl.Task.Sequence)
				}
			}
			if len(moved) > 0 {
				return nil, &errUnconfirmed{moved: moved}
			}
			return cancelled, nil
		})
		var unconfirmed *errUnconfirmed
		if !errors.As(err, &unconfirmed) {
			return cancelled, err
		}
		seqs = slices.DeleteFunc(seqs, func(seq int64) bool { return slices.Contains(unconfirmed.moved, seq) })
	}
	return nil, nil
}

// cancelledFrom is the state a cancelled task was in: ACTIVE when an
// owner ran it, else READY.
func cancelledFrom(c taskapi.Cancellation) taskapi.State {
	if c.Owner != "" {
		return taskapi.Active
	}
	return taskapi.Ready
}
