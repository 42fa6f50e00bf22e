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
		n, err := s.cfg.Store.Expire(ctx, after)
		if err != nil {
			return nil, err
		}
		return &outcome{Title: "Expired", Back: "/owners", Changed: n,
			Lines: []string{fmt.Sprintf("marked %s EXPIRED: the ACTIVE tasks of owners silent for longer than %s.", tasksWord(n), after)}}, nil
	}
	return p, nil
}

// heldTotal adds up what an owner holds.
func heldTotal(held map[string]int64) int64 {
	var n int64
	for _, k := range held {
		n += k
	}
	return n
}
