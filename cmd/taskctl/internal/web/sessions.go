package web

import (
	"crypto/rand"
	"sync"
	"time"
)

// maxSessions bounds the sessions kept. Only a login with the token
// starts one, so the bound is never reached in use; beyond it the session
// seen least recently ends.
const maxSessions = 10_000

// sessions are the logged-in sessions of a dashboard with a token, kept
// in the server's memory so that a logout ends a session for good (its
// cookie, copied or replayed, is refused afterwards) and that a session
// ends after its maximum age, or once idle for long. They end with the
// process too.
type sessions struct {
	maxAge, idle time.Duration
	now          func() time.Time

	mu   sync.Mutex
	byID map[string]*session
}

// session is one login: when it began, when a page was last asked for
// in it, and the name the operator gave at login (for the audit log).
type session struct {
	began, seen time.Time
	label       string
}

func newSessions(maxAge, idle time.Duration, now func() time.Time) *sessions {
	return &sessions{maxAge: maxAge, idle: idle, now: now, byID: map[string]*session{}}
}

// start begins a session and returns its id.
func (ss *sessions) start() string { return ss.startAs("") }

// startAs begins a session labelled with the operator's name and returns
// its id.
func (ss *sessions) startAs(label string) string {
	id := rand.Text()
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byID) >= maxSessions {
		ss.sweep(now)
	}
	ss.byID[id] = &session{began: now, seen: now, label: label}
	return id
}

// use says whether the session id is live, and ends it when it is too
// old or was idle for too long. A request of the operator (active) keeps
// it from going idle; one the page makes by itself does not.
func (ss *sessions) use(id string, active bool) bool {
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[id]
	if !ok {
		return false
	}
	if ss.over(s, now) {
		delete(ss.byID, id)
		return false
	}
	if active {
		s.seen = now
	}
	return true
}

// labelOf returns the label of the session id, empty when it has none or
// has ended.
func (ss *sessions) labelOf(id string) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.byID[id]; ok {
		return s.label
	}
	return ""
}

// end ends the session id (a logout).
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// over says whether s has ended at now.
func (ss *sessions) over(s *session, now time.Time) bool {
	return now.Sub(s.began) >= ss.maxAge || now.Sub(s.seen) >= ss.idle
}

// sweep drops the sessions that ended, and the one seen least recently
// when none did; ss.mu is held.
func (ss *sessions) sweep(now time.Time) {
	var oldest string
	for id, s := range ss.byID {
		if ss.over(s, now) {
			delete(ss.byID, id)
		} else if oldest == "" || s.seen.Before(ss.byID[oldest].seen) {
			oldest = id
		}
	}
	if len(ss.byID) >= maxSessions {
		delete(ss.byID, oldest)
	}
}
