package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Cancel cancels the tasks of topic with the given sequences that are
// READY, ACTIVE or SUSPENDED, and returns them.
func (b *backend[Tx]) Cancel(ctx context.Context, topic, reason string, sequences []int64) ([]taskapi.Cancellation, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) {
		return b.repo.Cancel(ctx, tx, topic, reason, sequences...)
	})
}

// CancelIdentifier cancels every READY task of identifier in topic, and
// returns them.
func (b *backend[Tx]) CancelIdentifier(ctx context.Context, topic, identifier, reason string) ([]taskapi.Cancellation, error) {
	return in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) {
		return b.repo.CancelIdentifier(ctx, tx, topic, identifier, reason)
	})
}

// errUnconfirmed rolls back a cancellation that met tasks in another
// state than confirmed.
type errUnconfirmed struct{ moved []int64 }

func (e *errUnconfirmed) Error() string { return fmt.Sprintf("tasks %v are not as confirmed", e.moved) }

// CancelIn cancels the tasks of topic named by confirmed that are, as
// they are cancelled, in the state confirmed gives for them (READY,
// ACTIVE or SUSPENDED), and returns them; a task in another state is left
// as it is. Canceller.Cancel takes a task in any of the three alike, and a
// task READY when it was confirmed may have been polled since: CancelIn
// cancels in a transaction that it rolls back when a task was cancelled
// from another state than confirmed (taskapi.Cancellation.From), and
// cancels the others again without it. The dashboard's
// cancellations so never change more than their confirmation showed.
func (b *backend[Tx]) CancelIn(ctx context.Context, topic, reason string, confirmed map[int64]taskapi.State) ([]taskapi.Cancellation, error) {
	seqs := make([]int64, 0, len(confirmed))
	for seq := range confirmed {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for len(seqs) > 0 {
		cancelled, err := in(ctx, b, func(tx Tx) ([]taskapi.Cancellation, error) {
			cancelled, err := b.repo.Cancel(ctx, tx, topic, reason, seqs...)
			if err != nil {
				return nil, err
			}
			var moved []int64
			for _, cl := range cancelled {
				if cl.From != confirmed[cl.Task.Sequence] {
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
