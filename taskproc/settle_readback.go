package taskproc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// settled finds out whether an attempt that failed with o.err committed,
// and which of live this owner still holds, reading back until the
// database answers (or, once the batch is given up, for a short while). A
// conflict is known not to have committed, and so is a completion that
// left its group unsent (see settle_group.go). It waits with backoff between
// reads.
func (s *batchSettler[Tx]) settled(ctx context.Context, b *Batch, how settlement, live []taskapi.Task, o outcome) (committed bool, held []taskapi.Task, err error) {
	if errors.Is(o.err, taskapi.ErrConflict) && !errors.Is(o.err, taskapi.ErrUnavailable) || errors.Is(o.err, errUnsent) {
		return false, live, nil
	}
	bo := s.m.backoff()
	for {
		rctx := ctx
		if ctx.Err() != nil { // the attempt was cut short: read back all the same, briefly
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.m.cleanupTime())
			defer cancel()
		}
		committed, held, err = s.readBack(rctx, how, live, o)
		if err == nil || rctx.Err() != nil {
			return committed, held, err
		}
		wait := bo.next()
		s.retrying(b, live, err, wait)
		if sleep(ctx, wait) != nil && b.revoked() != nil {
			return false, nil, fmt.Errorf("taskproc: read back the settlement of a batch of %q: %w", b.topic, err)
		}
	}
}

// readBack tells whether an attempt committed, and which of live this
// owner still holds: not when the attempt never got to ask for its commit
// (its BEGIN or a statement failed), not while this owner still holds any
// of live Active (a transaction writes all or nothing), else by the state
// of its evidence, a task it completed; without one, a write that made the
// tasks Ready again went through or another owner took them, and either way
// they are not this owner's.
func (s *batchSettler[Tx]) readBack(ctx context.Context, how settlement, live []taskapi.Task, o outcome) (bool, []taskapi.Task, error) {
	lo, hi := sequenceSpan(live)
	owned, err := s.m.ownActive(ctx, s.repo, taskapi.Range{From: lo, To: hi})
	if err != nil {
		return false, nil, err
	}
	held := slices.DeleteFunc(slices.Clone(live), func(t taskapi.Task) bool { return !slices.Contains(owned, t) })
	if !o.wrote || len(held) > 0 || o.evidence == nil {
		return o.wrote && len(held) == 0, held, nil
	}
	var info taskapi.Info
	var found bool
	err = s.m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
		info, found, err = s.repo.Lookup(ctx, tx, s.m.topic, o.evidence.Sequence)
		return err
	})
	if err != nil {
		return false, nil, err
	}
	return found && info.Owner == s.repo.Owner() && slices.Contains(o.completes, info.State), nil, nil
}

// retrying tells that an attempt, or its read-back, failed with err and is
// tried again after wait.
func (s *batchSettler[Tx]) retrying(b *Batch, live []taskapi.Task, err error, wait time.Duration) {
	s.m.stats.retried.Add(1)
	s.m.s.notify(Event{Kind: EventSettleRetried, Topic: b.topic, Tasks: live, Err: err, Duration: wait})
}
