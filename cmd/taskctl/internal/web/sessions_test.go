package web

import (
	"testing"
	"time"
)

// TestSessionsStayBounded starts one session more than are kept: the one
// seen least recently ends, the others stay.
func TestSessionsStayBounded(t *testing.T) {
	now := time.Now()
	ss := newSessions(time.Hour, time.Hour, func() time.Time { return now })
	first := ss.start()
	now = now.Add(time.Second)
	for range maxSessions {
		ss.start()
	}
	if len(ss.byID) != maxSessions {
		t.Errorf("%d sessions kept, want %d", len(ss.byID), maxSessions)
	}
	if ss.use(first, true) {
		t.Errorf("the session seen least recently is still live")
	}
}
