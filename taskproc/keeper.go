package taskproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// purgeEvery is how often at most the keeper purges dead owners (more often
// when the purge's own duration is shorter).
const purgeEvery = time.Hour

// errLate is why an owner fences itself when its heartbeat could not be
// confirmed within the expiry of the previous one: another process may
// have expired its tasks meanwhile.
var errLate = errors.New("taskproc: no heartbeat confirmed within the expiry")

// keeper keeps a Client's owner alive: it sends the heartbeat, expires the
// tasks of silent owners (and rescues them, if asked), purges dead owners,
// and fences the Client when its heartbeat was not confirmed within the
// expiry.
//
// The expiry is measured from the moment the last confirmed heartbeat was
// sent, never from when its answer came: the database recorded it at or
// after that moment, so another process can expire the owner no earlier
// than the expiry after it. A timer fences the Client at that deadline,
// and a heartbeat confirmed after it (a process stopped with SIGSTOP, a
// VM paused, a heartbeat that waited long) fences it just the same: the
// Client never carries on with claims another process may have taken.
type keeper[Tx any] struct {
	own       runner[Tx]            // its transactions, bounded (see bound.go)
	beats     runner[Tx]            // its heartbeats, bounded by the interval too, so that one that went silent is tried again well before the owner would fence
	managers  func() []*Manager[Tx] // the Client's, whose tasks it keeps
	s         settings
	successor func(owner string) (Repository[Tx], error)

	mu    sync.Mutex
	repo  Repository[Tx] // the current owner
	sent  time.Time      // when the last confirmed heartbeat (or registration) was sent
	fuse  *time.Timer    // fences at sent + expiry
	fence bool           // fenced, until it recovers
	// lastPurge and lastSweep are when the keeper last purged owners and
	// expired (and rescued) tasks.
	lastPurge, lastSweep time.Time
}

// newKeeper returns the keeper of the owner of repo, which runs its
// transactions through transact and keeps the tasks of managers.
func newKeeper[Tx any](repo Repository[Tx], transact Transact[Tx], managers func() []*Manager[Tx], s settings) (*keeper[Tx], error) {
	k := &keeper[Tx]{own: runner[Tx]{transact, s.bound()}, beats: runner[Tx]{transact, min(s.bound(), s.heartbeat)}, managers: managers, s: s, repo: repo}
	if s.successor != nil {
		fn, ok := s.successor.(func(owner string) (Repository[Tx], error))
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
	sent := time.Now()
	err := retryConflicts(ctx, func() error {
		return k.own.run(ctx, func(ctx context.Context, tx Tx) error {
			_, err := repo.Register(ctx, tx)
			return err
		})
	})
	if err == nil {
		k.mu.Lock()
		k.fence, k.lastPurge = false, time.Now()
		k.mu.Unlock()
		k.confirm(repo, sent)
	}
	return err
}

// alive reports whether the owner's last heartbeat was confirmed within the
// expiry: whether its Managers may claim.
func (k *keeper[Tx]) alive() bool {
	if k.s.expiry == 0 {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.fence && time.Since(k.sent) < k.s.expiry
}

// confirm records a heartbeat of repo sent at sent and confirmed, and arms
// the fuse for its expiry.
func (k *keeper[Tx]) confirm(repo Repository[Tx], sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sent = sent
	if k.s.expiry == 0 {
		return
	}
	if k.fuse != nil {
		k.fuse.Stop()
	}
	k.fuse = time.AfterFunc(time.Until(sent.Add(k.s.expiry)), func() { k.fenceLate(repo, errLate) })
}

// stop disarms the fuse once the keeper stops.
func (k *keeper[Tx]) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fuse != nil {
		k.fuse.Stop()
		k.fuse = nil
	}
}

// run beats every heartbeat interval until stop is closed or ctx ends.
func (k *keeper[Tx]) run(ctx context.Context, stop <-chan struct{}) {
	ctx, cancel := untilClosed(ctx, stop) // a heartbeat may wait long
	defer cancel()
	defer k.stop()
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

// beat is one round: recover when fenced, else heartbeat, and then, when
// the heartbeat was confirmed in time, give back what the Managers left
// Active and look after the fleet.
func (k *keeper[Tx]) beat(ctx context.Context) {
	if k.isFenced() {
		ctx, cancel := context.WithTimeout(ctx, k.s.heartbeat)
		defer cancel()
		k.recover(ctx)
		return
	}
	repo := k.owner()
	sent, err := k.heartbeat(ctx, repo)
	if err != nil {
		if ctx.Err() != nil {
			return // cut short by Stop: not a failure to report
		}
		k.s.notify(Event{Kind: EventHeartbeatFailed, Owner: repo.Owner(), Err: err})
		return
	}
	if k.late() {
		k.fenceLate(repo, fmt.Errorf("%w: the heartbeat was confirmed %v after the one before it was sent", errLate, time.Since(k.lastSent()).Round(time.Millisecond)))
		return
	}
	k.confirm(repo, sent)
	ctx, cancel := context.WithTimeout(ctx, k.s.heartbeat)
	defer cancel()
	for _, m := range k.managers() {
		m.tidy(ctx)
	}
	k.maintain(ctx, repo)
}

// late reports whether the expiry has passed since the last confirmed
// heartbeat was sent.
func (k *keeper[Tx]) late() bool {
	return k.s.expiry > 0 && time.Since(k.lastSent()) >= k.s.expiry
}

// heartbeat sends repo's heartbeat, each attempt bounded (see bound.go),
// and tries again after a conflict or a failure of the database, on
// another connection, until heartbeatDeadline: one connection that went
// silent costs an attempt, not the owner's life. It returns when the
// heartbeat that went through was sent.
func (k *keeper[Tx]) heartbeat(ctx context.Context, repo Repository[Tx]) (time.Time, error) {
	ctx, cancel := context.WithDeadline(ctx, k.heartbeatDeadline())
	defer cancel()
	b := newBackoff()
	for {
		sent := time.Now()
		err := k.beats.run(taskapi.SingleStatement(ctx), func(ctx context.Context, tx Tx) error { return repo.Heartbeat(ctx, tx) })
		if err == nil || !retryable(err) || b.wait(ctx) != nil {
			return sent, err
		}
	}
}

// retryable reports whether an attempt of the runtime's that failed with
// err may go through when tried again: the database refused it for a
// concurrent transaction, did not answer, or did not answer in time.
func retryable(err error) bool {
	return errors.Is(err, taskapi.ErrConflict) || errors.Is(err, taskapi.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// heartbeatDeadline is how long a heartbeat may try: one interval, or, with
// an expiry, until the owner would fence itself. A heartbeat that waits for
// a busy database (SQLite's one writer under load) thus goes on waiting for
// its turn instead of giving up after every interval.
func (k *keeper[Tx]) heartbeatDeadline() time.Time {
	deadline := time.Now().Add(k.s.heartbeat)
	if k.s.expiry > 0 {
		deadline = laterTime(deadline, k.lastSent().Add(k.s.expiry))
	}
	return deadline
}

func laterTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (k *keeper[Tx]) isFenced() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fence
}

func (k *keeper[Tx]) lastSent() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sent
}

// fenceLate fences the Client, unless it is fenced already or repo is no
// longer its owner: every Manager stops claiming and gives up its batches
// and its term of leadership, since the owner may have been expired by
// another process meanwhile.
func (k *keeper[Tx]) fenceLate(repo Repository[Tx], cause error) {
	k.mu.Lock()
	if k.fence || k.repo != repo {
		k.mu.Unlock()
		return
	}
	k.fence = true
	k.mu.Unlock()
	for _, m := range k.managers() {
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
		if next, err = k.successor(NextOwner(old.Owner())); err != nil {
			k.s.notify(Event{Kind: EventMaintenanceFailed, Owner: old.Owner(), Err: err})
			return
		}
	}
	sent := time.Now()
	err := k.own.run(ctx, func(ctx context.Context, tx Tx) error {
		_, err := next.Register(ctx, tx)
		return err
	})
	if err != nil {
		k.s.notify(Event{Kind: EventHeartbeatFailed, Owner: next.Owner(), Err: err})
		return
	}
	k.mu.Lock()
	k.repo, k.fence = next, false
	k.mu.Unlock()
	k.confirm(next, sent)
	for _, m := range k.managers() {
		if next == old {
			m.unfence(ctx, nil) // the same owner: give back what it gave up
		} else {
			m.unfence(ctx, next)
		}
	}
	k.s.notify(Event{Kind: EventRecovered, Owner: next.Owner()})
}

// maintain expires silent owners' tasks, rescues them if asked, and purges
// dead owners now and then. Failures are told and tried again next round.
func (k *keeper[Tx]) maintain(ctx context.Context, repo Repository[Tx]) {
	if k.due(&k.lastSweep, k.sweepEvery()) {
		k.sweep(ctx, repo)
	}
	if k.s.purge > 0 && k.due(&k.lastPurge, min(purgeEvery, k.s.purge)) {
		k.try(ctx, repo, func(ctx context.Context, tx Tx) error {
			_, err := repo.PurgeOwners(ctx, tx, k.s.purge)
			return err
		})
	}
}

// sweepEvery is how often the keeper expires and rescues: a quarter of the
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

// sweep expires silent owners' tasks and rescues the expired tasks of the
// Client's topics, if asked (see rescue).
func (k *keeper[Tx]) sweep(ctx context.Context, repo Repository[Tx]) {
	if k.s.expiry > 0 {
		k.try(ctx, repo, func(ctx context.Context, tx Tx) error {
			_, err := repo.Expire(ctx, tx, k.s.expiry)
			return err
		})
	}
	if k.s.revival {
		for _, m := range k.managers() {
			if err := m.rescue(ctx, repo); err != nil {
				k.s.notify(Event{Kind: EventMaintenanceFailed, Topic: m.topic, Owner: repo.Owner(), Err: err})
			}
		}
	}
}

// try runs fn in a transaction and tells of its failure.
func (k *keeper[Tx]) try(ctx context.Context, repo Repository[Tx], fn func(ctx context.Context, tx Tx) error) {
	if err := k.own.run(ctx, fn); err != nil {
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
