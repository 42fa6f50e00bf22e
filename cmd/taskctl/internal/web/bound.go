package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// An action over every task of a state (a span with no upper bound, or
// one wider than the topic) would, run as its confirmation's form says,
// select its tasks again at the POST: tasks pushed or finished between the
// confirmation and the POST would change too, more than the operator
// agreed to. So the confirmation fixes a bound, the topic's highest
// sequence and the database's time when it counted, and sends it back as
// the form values bound and at; the POST changes only tasks up to that
// sequence and completed at or before that time (taskapi.CompletionBounded). They
// are the operator's agreement, not a secret: the CSRF check covers the
// POST, and a changed bound only narrows or widens what the operator
// confirms with it.

// bound is what a confirmation saw: the highest sequence of the topic and
// the database's time.
type bound struct {
	seq int64
	at  time.Time
	// unread says that a confirmation could not read the topic's highest
	// sequence within boundBudget (a lock held on the tasks, say):
	// it offers nothing to confirm then.
	unread bool
}

// boundNames are the form values of a bound.
const (
	boundSeq  = "bound"
	boundTime = "at"
)

// confirmedBound is the bound of an action on topic: read now for a
// confirmation (preview), else the one its confirmation sent back in f,
// which must be there.
func (s *Server) confirmedBound(ctx context.Context, f form, topic string, preview bool) (bound, error) {
	if preview {
		return s.readBound(ctx, topic)
	}
	seq, err := strconv.ParseInt(f.text(boundSeq), 10, 64)
	if err != nil || seq < taskapi.Inception {
		return bound{}, badRequest("%s %q: the bound of the confirmation is missing or not a sequence; open the confirmation again", boundSeq, f.text(boundSeq))
	}
	at, err := time.Parse(time.RFC3339Nano, f.text(boundTime))
	if err != nil {
		return bound{}, badRequest("%s %q: the time of the confirmation is missing or not a time; open the confirmation again", boundTime, f.text(boundTime))
	}
	return bound{seq: seq, at: at.UTC()}, nil
}

// boundBudget bounds the read of a topic's highest sequence: one entry of
// its primary key, so that a read that takes longer waits for a lock, and
// the confirmation offers nothing to confirm rather than wait with it.
const boundBudget = time.Second

// readBound reads the bound of topic now: its highest sequence (Inception
// when it has no task), then the database's clock, so that every task
// completed before the count that follows is within it.
func (s *Server) readBound(ctx context.Context, topic string) (bound, error) {
	b := bound{seq: taskapi.Inception}
	read, err := withinBudget(ctx, boundBudget, func(ctx context.Context) error {
		last, err := s.cfg.Store.Page(ctx, topic, taskapi.Listing{}, taskapi.MaxSequence, 1, taskapi.Backward)
		if len(last) > 0 {
			b.seq = last[0].Sequence
		}
		return err
	})
	if err != nil {
		return b, err
	}
	b.unread = !read
	b.at, err = s.cfg.Store.Now(ctx)
	return b, err
}

// narrow returns span cut at the bound's sequence (not when unread: the
// confirmation still counts, but offers nothing to confirm).
func (b bound) narrow(span taskapi.Range) taskapi.Range {
	if !b.unread {
		span.To = min(span.To, b.seq)
	}
	return span
}

// bind says on the confirmation p what the bound leaves out; an unread
// bound leaves p nothing to confirm.
func (p *plan) bind(b bound) {
	if b.unread {
		p.None = true
		p.Lines = append(p.Lines, "The topic's highest sequence could not be read in time, so this action cannot be bound to what this page shows: open it again in a moment.")
		return
	}
	p.Lines = append(p.Lines, b.describe())
}

// values writes the bound into v.
func (b bound) values(v url.Values) {
	v.Set(boundSeq, strconv.FormatInt(b.seq, 10))
	v.Set(boundTime, b.at.UTC().Format(time.RFC3339Nano))
}

// describe says what the bound leaves out, for the confirmation.
func (b bound) describe() string {
	return fmt.Sprintf("Only tasks up to sequence %d, finished (if at all) by %s, change when you confirm: tasks pushed or finished later are left as they are.",
		b.seq, stamp(b.at))
}

// taskCost is about how long a bulk action takes per task, measured on
// PostgreSQL and SQLite (revive, reassign, defer, purge; see README): the
// confirmation of an action that may take longer than a second says so.
const taskCost = 30 * time.Microsecond

// note says on the confirmation p what the selection's bound leaves out
// (by state) and how long the action (what: "revival") may take.
func (p *plan) note(sel selection, e estimate, what string) {
	if sel.byState {
		p.bind(sel.bound)
	}
	p.Lines = append(p.Lines, slowNote(e, what)...)
}

// slowNote tells the operator, for an action on as many tasks as e that
// may take longer than a second, that it may take a while and that the
// result page answers when it is done.
func slowNote(e estimate, what string) []string {
	if took := time.Duration(e.n) * taskCost; took > time.Second {
		return []string{fmt.Sprintf("The %s may take about %s; it goes in steps of a transaction each, and the result page answers when it is done: keep this tab open.",
			what, dur(took))}
	}
	return nil
}
