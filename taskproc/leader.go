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
func WithLeadership(ttl time.Duration) Option { return func(s *settings) { s.leadership = ttl } }

// WithLeaderCallback sets a function that a Manager with leadership calls,
// on a goroutine of its own, each time it starts to lead: ctx ends when the
// leadership ends, and before the term can expire in the database, so that
// the function never acts while another process leads. It must return once
// ctx ends.
func WithLeaderCallback(fn func(ctx context.Context, term taskapi.Term)) Option {
	return func(s *settings) { s.onLead = fn }
}

// leadership is a Manager's part in the election of its topic's leader.
type leadership[Tx any] struct {
	m      *Manager[Tx]
	leader taskapi.Leader[Tx]
	ttl    time.Duration

	mu     sync.Mutex
	term   taskapi.Term
	cancel context.CancelFunc // ends the term's context
	timer  *time.Timer        // ends the term at its local deadline
}

// startLeadership holds the Manager's polls until it leads, and runs the
// election until the run stops polling; the returned channel is closed when
// it has conceded.
func (m *Manager[Tx]) startLeadership(r *run) (<-chan struct{}, error) {
	leader, ok := any(m.repository()).(taskapi.Leader[Tx])
	if !ok {
		return nil, fmt.Errorf("taskproc: leadership of %q: the repository issues no terms: %w", m.topic, taskapi.ErrInvalidArgument)
	}
	m.hold(holdLeader, true)
	l := &leadership[Tx]{m: m, leader: leader, ttl: m.s.leadership}
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
	return m.s.leadership > 0 && m.holds.Load()&int32(holdLeader) == 0
}

// run takes part in the election every third of the term until the loop's
// context ends, then concedes.
func (l *leadership[Tx]) run(r *run) {
	ticker := time.NewTicker(l.ttl / 3)
	defer ticker.Stop()
	for {
		l.round(r.ctx)
		select {
		case <-r.loopCtx.Done():
			l.lose(nil, true)
			return
		case <-ticker.C:
		}
	}
}

// round leads when nobody does, or renews the term.
func (l *leadership[Tx]) round(ctx context.Context) {
	l.mu.Lock()
	term, leading := l.term, l.cancel != nil
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	defer cancel()
	start := time.Now()
	var (
		next taskapi.Term
		ok   bool
	)
	err := l.m.transact(ctx, func(tx Tx) (err error) {
		if leading {
			next, ok, err = l.leader.Renew(ctx, tx, term, l.ttl)
		} else {
			next, ok, err = l.leader.Lead(ctx, tx, l.m.topic, l.ttl)
		}
		return err
	})
	switch {
	case leading && (err != nil || !ok):
		l.lose(errors.Join(errors.New("taskproc: the renewal of the term failed"), err), err == nil)
	case ok:
		l.hold(next, start.Add(next.Left-l.ttl/5))
	}
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
// and, when concede is set, the term is ended in the database so that
// another process may lead at once.
func (l *leadership[Tx]) lose(cause error, concede bool) {
	l.mu.Lock()
	cancel, timer, term := l.cancel, l.timer, l.term
	l.cancel, l.timer = nil, nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	timer.Stop()
	l.m.hold(holdLeader, true)
	cancel()
	if concede {
		ctx, stop := context.WithTimeout(context.Background(), l.ttl/3)
		defer stop()
		_ = l.m.transact(ctx, func(tx Tx) error { return l.leader.Concede(ctx, tx, term) })
	}
	l.m.s.notify(Event{Kind: EventConceded, Topic: l.m.topic, Term: term, Err: cause})
}
