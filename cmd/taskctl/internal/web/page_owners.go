package web

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// ownerLine is one owner on the owners page.
type ownerLine struct {
	Owner     string
	Heartbeat time.Time
	Silent    time.Duration
	Fenced    bool // silent for longer than the expiry: its tasks may be expired
	Held      int64
	Topics    []heldTopic
}

// heldTopic is what an owner holds in one topic.
type heldTopic struct {
	Topic string
	Tasks int64
	Link  string // the topic's ACTIVE tasks
}

// ownersData is the owners page.
type ownersData struct {
	Owners        []ownerLine
	Alive, Fenced int
	Expiry        time.Duration
	FencedHolding int64 // the ACTIVE tasks that fenced owners hold
	ReadOnly      bool
}

// ownersPage shows every registered owner, read from the database: its
// heartbeat, whether it is fenced, and its ACTIVE tasks per topic.
func (s *Server) ownersPage(w http.ResponseWriter, r *http.Request) {
	roster, err := s.cfg.Reads.Roster(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := ownersData{Expiry: s.cfg.Expiry, ReadOnly: s.cfg.ReadOnly}
	now := time.Now()
	for _, o := range roster {
		line := ownerLine{Owner: o.Owner, Heartbeat: o.Heartbeat, Silent: max(now.Sub(o.Heartbeat), 0), Held: heldTotal(o.Held)}
		line.Fenced = line.Silent > s.cfg.Expiry
		topics := make([]string, 0, len(o.Held))
		for t := range o.Held {
			topics = append(topics, t)
		}
		slices.Sort(topics)
		for _, t := range topics {
			line.Topics = append(line.Topics, heldTopic{Topic: t, Tasks: o.Held[t],
				Link: link("/topic", url.Values{"topic": {t}, "state": {taskapi.Active.String()}})})
		}
		if line.Fenced {
			d.Fenced++
			d.FencedHolding += line.Held
		} else {
			d.Alive++
		}
		d.Owners = append(d.Owners, line)
	}
	s.render(w, r, http.StatusOK, "owners", frame{Title: "Owners", Nav: "owners", Data: d})
}
