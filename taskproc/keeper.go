package taskproc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// revivalSize is how many expired tasks of a topic the keeper revives per
// round.
const revivalSize = 1000

// purgeEvery is how often at most the keeper purges dead owners (more often
// when the purge's own duration is shorter).
const purgeEvery = time.Hour

// keeper keeps a Client's owner alive: it sends the heartbeat, expires the
// tasks of silent owners (and revives them, if asked), purges dead owners,
// and fences the Client when its own heartbeat fails for longer than the
// expiry.
type keeper[Tx any] struct {
	c         *Client[Tx]
	s         settings
	successor func(previous string) (Repository[Tx], error)

	mu        sync.Mutex
	repo      Repository[Tx] // the current owner
	confirmed time.Time      // when the heartbeat was last confirmed
	fenced    bool
	lastPurge time.Time
	// lastSweep is when the keeper last expired (and revived) tasks.
	lastSweep time.Time
}

func newKeeper[Tx any](c *Client[Tx], repo Repository[Tx], s settings) (*keeper[Tx], error) {
	k := &keeper[Tx]{c: c, s: s, repo: repo}
	if s.successor != nil {
		fn, ok := s.successor.(func(previous string) (Repository[Tx], error))
		if !ok {
			return nil, fmt.Errorf("taskproc: a successor of type %T for a repository of type %T: %w", s.successor, repo, taskapi.ErrInvalidArgument)
		}
		k.successor = fn
	}
	return k, nil
}

// owner returns the current owner's repository.
func (k *keeper[Tx]) owner() Repository[Tx] {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.repo
}

// register registers the current owner at start, again after a conflict
// (on SQLite, the processes starting at once contend for the write lock).
func (k *keeper[Tx]) register(ctx context.Context) error {
	repo := k.owner()
	err := retryConflicts(ctx, func() error {
		return k.c.transact(ctx, func(tx Tx) error {
			_, err := repo.Register(ctx, tx)
			return err
		})
	})
	if err == nil {
		k.mu.Lock()
		k.confirmed, k.lastPurge = time.Now(), time.Now()
		k.mu.Unlock()
	}
	return err
}

// run beats every heartbeat interval until stop is closed or ctx ends.
func (k *keeper[Tx]) run(ctx context.Context, stop <-chan struct{}) {
	ctx, cancel := untilClosed(ctx, stop) // a heartbeat may wait long
	defer cancel()
	ticker := time.NewTicker(k.s.heartbeat)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		k.beat(ctx)
	}
}

// beat is one round: recover when fenced, else heartbeat, and maintenance
// when the heartbeat went through, or fencing when it has failed too long.
func (k *keeper[Tx]) beat(ctx context.Context) {
	if k.isFenced() {
		ctx, cancel := context.WithTimeout(ctx, k.s.heartbeat)
		defer cancel()
		k.recover(ctx)
		return
	}
	repo := k.owner()
	if err := k.heartbeat(ctx, repo); err != nil {
		if ctx.Err() != nil {
			return // cut short by Stop: not a failure to report
		}
		k.s.notify(Event{Kind: EventHeartbeatFailed, Owner: repo.Owner(), Err: err})
		if k.s.expiry > 0 && time.Since(k.lastConfirmed()) > k.s.expiry {
			k.fence(repo, err)
		}
		return
	}
	k.mu.Lock()
	k.confirmed = time.Now()
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, k.s.heartbeat)
	defer cancel()
	k.maintain(ctx, repo)
}

// heartbeat sends repo's heartbeat, trying again after conflicts until
// heartbeatDeadline.
func (k *keeper[Tx]) heartbeat(ctx context.Context, repo Repository[Tx]) error {
	ctx, cancel := context.WithDeadline(ctx, k.heartbeatDeadline())
	defer cancel()
	return retryConflicts(ctx, func() error {
		return k.c.transact(ctx, func(tx Tx) error { return repo.Heartbeat(ctx, tx) })
	})
}

// heartbeatDeadline is how long a heartbeat may try: one interval, or, with
// an expiry, until the owner would fence itself. A heartbeat that waits for
// a busy database (SQLite's one writer under load) thus goes on waiting for
// its turn instead of giving up after every interval.
func (k *keeper[Tx]) heartbeatDeadline() time.Time {
	deadline := time.Now().Add(k.s.heartbeat)
	if k.s.expiry > 0 {
		deadline = later(deadline, k.lastConfirmed().Add(k.s.expiry))
	}
	return deadline
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (k *keeper[Tx]) isFenced() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fenced
}

func (k *keeper[Tx]) lastConfirmed() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.confirmed
}

// fence stops every Manager from claiming and gives up their batches: the
// owner may have been expired by another process meanwhile.
func (k *keeper[Tx]) fence(repo Repository[Tx], cause error) {
	k.mu.Lock()
	k.fenced = true
	k.mu.Unlock()
	for _, m := range k.c.managerList() {
		m.fence()
	}
	k.s.notify(Event{Kind: EventFenced, Owner: repo.Owner(), Err: fmt.Errorf("%w: %w", ErrFenced, cause)})
}

// recover goes on under the successor once it registers, or, without a
// successor, as the same owner once its heartbeat goes through again.
func (k *keeper[Tx]) recover(ctx context.Context) {
	old := k.owner()
	next := old
	if k.successor != nil {
		var err error
		if next, err = k.successor(old.Owner()); err != nil {
			k.s.notify(Event{Kind: EventMaintenanceFailed, Owner: old.Owner(), Err: err})
			return
		}
	}
	err := k.c.transact(ctx, func(tx Tx) error {
		_, err := next.Register(ctx, tx)
		return err
	})
	if err != nil {
		k.s.notify(Event{Kind: EventHeartbeatFailed, Owner: next.Owner(), Err: err})
		return
	}
	k.mu.Lock()
	k.repo, k.fenced, k.confirmed = next, false, time.Now()
	k.mu.Unlock()
	for _, m := range k.c.managerList() {
		if next == old {
			m.unfence(ctx, nil) // the same owner: give back what it gave up
		} else {
			m.unfence(ctx, next)
		}
	}
	k.s.notify(Event{Kind: EventRecovered, Owner: next.Owner()})
}

// maintain expires silent owners' tasks, revives them if asked, and purges
// dead owners now and then. Failures are told and tried again next round.
func (k *keeper[Tx]) maintain(ctx context.Context, repo Repository[Tx]) {
	if k.due(&k.lastSweep, k.sweepEvery()) {
		k.sweep(ctx, repo)
	}
	if k.s.purge > 0 && k.due(&k.lastPurge, min(purgeEvery, k.s.purge)) {
		k.try(ctx, repo, func(tx Tx) error {
			_, err := repo.PurgeOwners(ctx, tx, k.s.purge)
			return err
		})
	}
}

// sweepEvery is how often the keeper expires and revives: a quarter of the
// expiry, but not more often than it beats. A crashed owner's tasks are
// thus expired at most a quarter of the expiry late, and an idle process
// spends few statements on it (every process sweeps: the sweeps of a fleet
// add up).
func (k *keeper[Tx]) sweepEvery() time.Duration { return max(k.s.heartbeat, k.s.expiry/4) }

// due reports whether every has passed since *last, and if so sets *last
// to now.
func (k *keeper[Tx]) due(last *time.Time, every time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Since(*last) < every {
		return false
	}
	*last = time.Now()
	return true
}

// sweep expires silent owners' tasks and revives expired tasks, if asked.
func (k *keeper[Tx]) sweep(ctx context.Context, repo Repository[Tx]) {
	if k.s.expiry > 0 {
		k.try(ctx, repo, func(tx Tx) error {
			_, err := repo.Expire(ctx, tx, k.s.expiry)
			return err
		})
	}
	if k.s.revival {
		for _, topic := range k.c.Topics() {
			k.try(ctx, repo, func(tx Tx) error {
				_, err := repo.Revive(ctx, tx, topic, taskapi.ReviveReset, taskapi.Expired, taskapi.Unbounded, revivalSize)
				return err
			})
		}
	}
}

// try runs fn in a transaction and tells of its failure.
func (k *keeper[Tx]) try(ctx context.Context, repo Repository[Tx], fn func(tx Tx) error) {
	if err := k.c.transact(ctx, fn); err != nil {
		k.s.notify(Event{Kind: EventMaintenanceFailed, Owner: repo.Owner(), Err: err})
	}
}

// NextOwner names the successor of an owner: previous with a generation
// number appended, or the number raised ("worker-1" → "worker-1#2" →
// "worker-1#3").
func NextOwner(previous string) string {
	base, generation := previous, 1
	if i := strings.LastIndexByte(previous, '#'); i >= 0 {
		if n, err := strconv.Atoi(previous[i+1:]); err == nil && n > 0 {
			base, generation = previous[:i], n
		}
	}
	return base + "#" + strconv.Itoa(generation+1)
}
