package web

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Guessing the token is throttled per client address and over every
// client: after a few wrong tokens in a row, a client waits before its
// next token is even compared, and each wrong token after a wait doubles
// it. A request that comes during a wait is refused at once (429, with
// Retry-After): nothing sleeps, so that no goroutine is held per attempt.
// The token is not compared during a wait, not even the right one, so
// that a wait tells a guesser nothing.
//
// Behind a reverse proxy every client has the proxy's address, so the
// throttle of a client is then the proxy's: one more bound over all.

// A limit is how a throttle treats wrong tokens: free of them in a row
// cost nothing; the free-th makes the client wait first, and each one
// after a wait doubles it, up to most; failures are forgotten once none
// came for forget.
type limit struct {
	free        int
	first, most time.Duration
	forget      time.Duration
}

// Per client address, a few typing errors cost nothing, and a guesser is
// held to one token per quarter of an hour soon; over every client, a
// guesser with many addresses is held to one per minute.
var (
	clientLimit = limit{free: 5, first: time.Second, most: 15 * time.Minute, forget: time.Hour}
	globalLimit = limit{free: 20, first: time.Second, most: time.Minute, forget: 10 * time.Minute}
)

// maxClients bounds the clients a throttle remembers; beyond it, new
// clients are held by the global limit alone.
const maxClients = 10_000

// strikes are the wrong tokens in a row of a client, or of all.
type strikes struct {
	failures    int
	last, until time.Time // the last wrong token; no token is compared before until
}

// throttle holds the strikes of every client and of all.
type throttle struct {
	now func() time.Time

	mu      sync.Mutex
	clients map[string]*strikes
	all     strikes
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, clients: map[string]*strikes{}}
}

// try compares a token with matches unless client, or every client, must
// wait; it returns whether the token matched and, when it was not
// compared, how long to wait. The comparison runs under the lock, so that
// tokens sent at once are counted one after the other.
func (t *throttle) try(client string, matches func() bool) (ok bool, wait time.Duration) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.client(client, now)
	for _, s := range []*strikes{mine, &t.all} {
		if s != nil && now.Before(s.until) {
			wait = max(wait, s.until.Sub(now))
		}
	}
	if wait > 0 {
		return false, wait
	}
	if matches() {
		t.all = strikes{}
		delete(t.clients, client)
		return true, 0
	}
	if mine != nil {
		mine.strike(now, clientLimit)
	}
	t.all.strike(now, globalLimit)
	return false, 0
}

// client returns the strikes of client, new when it has none or they are
// forgotten; nil when no more clients can be remembered.
func (t *throttle) client(client string, now time.Time) *strikes {
	s, ok := t.clients[client]
	if ok && now.Sub(s.last) < clientLimit.forget {
		return s
	}
	if !ok && len(t.clients) >= maxClients {
		t.forgetOld(now)
		if len(t.clients) >= maxClients {
			return nil
		}
	}
	s = &strikes{}
	t.clients[client] = s
	return s
}

// forgetOld drops the clients whose strikes are forgotten; t.mu is held.
func (t *throttle) forgetOld(now time.Time) {
	for c, s := range t.clients {
		if now.Sub(s.last) >= clientLimit.forget {
			delete(t.clients, c)
		}
	}
}

// strike counts a wrong token at now under l.
func (s *strikes) strike(now time.Time, l limit) {
	if now.Sub(s.last) >= l.forget {
		s.failures = 0
	}
	s.failures++
	s.last = now
	if s.failures >= l.free {
		s.until = now.Add(min(l.first<<min(s.failures-l.free, 30), l.most))
	}
}

// clientOf is the address r came from, without its port.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// retryAfter sets the Retry-After header of a wait, in whole seconds
// rounded up.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
}
