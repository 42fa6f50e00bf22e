package web

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
)

// planExpire marks EXPIRED the ACTIVE tasks of the owners silent for longer
// than after (default: the dashboard's --expiry). The confirmation names
// the silent owners and what they hold, from the roster.
func (s *Server) planExpire(ctx context.Context, f form, preview bool) (*plan, error) {
	after := s.cfg.Expiry
	if v := f.text("after"); v != "" {
		var err error
		if after, err = ops.ParseDuration("after", v); err != nil {
			return nil, err
		}
	}
	p := &plan{Title: "Expire silent owners", Hidden: url.Values{"after": {after.String()}}, Back: "/owners"}
	// The POST expires the owners that were silent for longer than after
	// at the confirmation, and have stayed so: silent for longer than
	// after plus the time since. An owner that fell silent after the
	// confirmation has been silent for less, and keeps its tasks.
	since, err := expireSince(f, preview)
	if err != nil {
		return nil, err
	}
	p.Hidden.Set(boundTime, time.Now().Add(-since).UTC().Format(time.RFC3339Nano))
	if preview {
		roster, err := s.cfg.Store.Roster(ctx)
		if err != nil {
			return nil, err
		}
		var held, owners int64
		for _, o := range roster {
			if time.Since(o.Heartbeat) <= after {
				continue
			}
			n := heldTotal(o.Held)
			if n > 0 {
				owners++
				held += n
				p.Lines = append(p.Lines, fmt.Sprintf("%q, silent for %s, holds %s", o.Owner, dur(time.Since(o.Heartbeat)), tasksWord(n)))
			}
		}
		p.None = held == 0
		p.Lines = append(p.Lines, fmt.Sprintf("%s of %d owners silent for longer than %s would become EXPIRED (revivable).", tasksWord(held), owners, after))
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		n, err := s.cfg.Store.Expire(ctx, after+since)
		if err != nil {
			return nil, err
		}
		return &outcome{Title: "Expired", Back: "/owners", Changed: n,
			Lines: []string{fmt.Sprintf("marked %s EXPIRED: the ACTIVE tasks of owners silent for longer than %s.", tasksWord(n), after)}}, nil
	}
	return p, nil
}

// expireSince is how long ago the confirmation of an expiry was: zero for
// the confirmation (preview), else from the time it sent back.
func expireSince(f form, preview bool) (time.Duration, error) {
	if preview {
		return 0, nil
	}
	at, err := time.Parse(time.RFC3339Nano, f.text(boundTime))
	if err != nil {
		return 0, badRequest("%s %q: the time of the confirmation is missing or not a time; open the confirmation again", boundTime, f.text(boundTime))
	}
	return max(time.Since(at), 0), nil
}

// heldTotal adds up what an owner holds.
func heldTotal(held map[string]int64) int64 {
	var n int64
	for _, k := range held {
		n += k
	}
	return n
}
