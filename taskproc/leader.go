package taskproc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// errTermEnding is why a leader's context ends when its term runs out
// before a renewal went through.
var errTermEnding = errors.New("taskproc: the term of leadership runs out before it was renewed")

// WithLeadership makes a topic's consumption exclusive: of all the
// processes that run a Manager of the topic with this option, only the one
// that leads it polls. Leadership is a term of ttl issued by the database
// (the repository must be a taskapi.Leader), renewed every third of it; a
// leader that fails to renew concedes at once, and another process takes
// over at most ttl and a third after the leader died.
func WithLeadership(ttl time.Duration) TopicOption { return func(s *settings) { s.leaderTTL = ttl } }

// WithLeaderCallback sets a function that a Manager with leadership calls,
// on a goroutine of its own, each time it starts to lead: ctx ends when the
// leadership ends, and before the term can expire in the database, so that
// the function never acts while another process leads. It must return once
// ctx ends.
func WithLeaderCallback(fn func(ctx context.Context, term taskapi.Term)) TopicOption {
	return func(s *settings) { s.onLead = fn }
}

// leadership is a Manager's part in the election of its topic's leader.
type leadership[Tx any] struct {
	m   *Manager[Tx]
	ttl time.Duration

	mu     sync.Mutex
	term   taskapi.Term
	lost   int64              // the number of the last term lost: never led again
	cancel context.CancelFunc // ends the term's context
	timer  *time.Timer        // ends the term at its local deadline
}

// startLeadership holds the Manager's polls until it leads, and runs the
// election until the run's batches are settled; the returned channel is
// closed when it has conceded.
func (m *Manager[Tx]) startLeadership(r *managerRun) (<-chan struct{}, error) {
	if _, ok := any(m.repository()).(taskapi.Leader[Tx]); !ok {
		return nil, fmt.Errorf("taskproc: leadership of %q: the repository issues no terms: %w", m.topic, taskapi.ErrInvalidArgument)
	}
	m.hold(holdLeader, true)
	l := &leadership[Tx]{m: m, ttl: m.s.leaderTTL}
	m.lead.Store(l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(r)
	}()
	return done, nil
}

// Leading reports whether the Manager leads its topic (always false
// without WithLeadership).
func (m *Manager[Tx]) Leading() bool {
	return m.s.leaderTTL > 0 && m.holds.Load()&int32(holdLeader) == 0
}

// term returns the term the Manager polls under: the zero Term and true
// without leadership, false when it leads no term.
func (m *Manager[Tx]) term() (taskapi.Term, bool) {
	if m.s.leaderTTL == 0 {
		return taskapi.Term{}, true
	}
	l := m.lead.Load()
	if l == nil {
		return taskapi.Term{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term, l.cancel != nil
}

// loseTerm gives up the term the Manager leads, if any, for cause.
func (m *Manager[Tx]) loseTerm(cause error) {
	if l := m.lead.Load(); l != nil {
		l.lose(cause, false)
	}
}

// run takes part in the election every third of the term until the run's
// batches are settled, then concedes. The rounds do not end with the run's
// context: a stopping Manager keeps its term while its batches finish.
func (l *leadership[Tx]) run(r *managerRun) {
	ticker := time.NewTicker(l.ttl / 3)
	defer ticker.Stop()
	ctx := context.WithoutCancel(r.ctx)
	for {
		l.round(ctx, r.loopCtx.Err() != nil) // a stopping Manager renews, and leads no new term
		select {
		case <-r.unelect:
			l.lose(nil, true)
			return
		case <-ticker.C:
		}
	}
}

// round leads when nobody does, unless renewOnly, or renews the term.
func (l *leadership[Tx]) round(ctx context.Context, renewOnly bool) {
	l.mu.Lock()
	term, leading := l.term, l.cancel != nil
	l.mu.Unlock()
	if !leading && (renewOnly || l.m.fenced()) {
		return // a fenced owner may have been replaced: it leads nothing
	}
	leader, isLeader := any(l.m.repository()).(taskapi.Leader[Tx])
	if !isLeader {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	defer cancel()
	start := time.Now()
	var (
		next taskapi.Term
		ok   bool
	)
	// A conflict with another process's election (a MySQL deadlock, say)
	// is no failed renewal: the round tries again within its time.
	err := retryConflicts(ctx, func() error {
		return l.m.own.run(ctx, func(ctx context.Context, tx Tx) (err error) {
			if leading {
				next, ok, err = leader.Renew(ctx, tx, term, l.ttl)
			} else {
				next, ok, err = leader.Lead(ctx, tx, l.m.topic, l.ttl)
			}
			return err
		})
	})
	ok = ok && err == nil // a term only from a transaction that committed
	switch {
	case leading && !ok:
		l.lose(errors.Join(errors.New("taskproc: the renewal of the term failed"), err), err == nil)
	case ok && !leading && next.Number == l.lostNumber():
		// The term this Manager lost is still its own in the database (its
		// concession failed): end it rather than lead it again, so that a
		// lost term never comes back.
		l.concede(leader, next)
	case ok:
		l.hold(next, start.Add(next.Left-l.ttl/5))
	}
}

// lostNumber returns the number of the last term lost.
func (l *leadership[Tx]) lostNumber() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// hold makes term this Manager's, until deadline (local clock) unless a
// renewal moves it.
func (l *leadership[Tx]) hold(term taskapi.Term, deadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		// A renewal: move the deadline, unless it passed meanwhile and the
		// term is being given up already.
		if l.timer.Stop() {
			l.term = term
			l.timer.Reset(time.Until(deadline))
		}
		return
	}
	l.term = term
	ctx, cancel := context.WithCancelCause(context.Background())
	l.cancel = func() { cancel(errTermEnding) }
	l.timer = time.AfterFunc(time.Until(deadline), func() { l.lose(errTermEnding, false) })
	l.m.hold(holdLeader, false)
	l.m.s.notify(Event{Kind: EventLeading, Topic: l.m.topic, Term: term})
	if l.m.s.onLead != nil {
		go l.m.s.onLead(ctx, term)
	}
}

// lose gives up leading: the loop stops claiming, the term's context ends,
// the batches polled under the term are given up (their tasks go back to
// Ready), and, when concede is set, the term is ended in the database so
// that another process may lead at once.
func (l *leadership[Tx]) lose(cause error, concede bool) {
	l.mu.Lock()
	cancel, timer, term := l.cancel, l.timer, l.term
	l.cancel, l.timer = nil, nil
	if cancel != nil {
		l.lost = term.Number
	}
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	timer.Stop()
	l.m.hold(holdLeader, true)
	cancel()
	for _, b := range l.m.inFlight() {
		if b.term.Number == term.Number {
			b.revoke(ErrTermLost)
		}
	}
	if leader, ok := any(l.m.repository()).(taskapi.Leader[Tx]); ok && concede {
		l.concede(leader, term)
	}
	l.m.s.notify(Event{Kind: EventConceded, Topic: l.m.topic, Term: term, Err: cause})
}

// concede ends term in the database.
func (l *leadership[Tx]) concede(leader taskapi.Leader[Tx], term taskapi.Term) {
	ctx, stop := context.WithTimeout(context.Background(), l.ttl/3)
	defer stop()
	if err := l.m.own.run(ctx, func(ctx context.Context, tx Tx) error { return leader.Concede(ctx, tx, term) }); err != nil {
		l.m.s.logger.Warn("taskproc: concede a term", "topic", l.m.topic, "term", term.Number, "err", err)
	}
}
