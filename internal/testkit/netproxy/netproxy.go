// Package netproxy is a TCP proxy for tests that cut a client off from its
// database: while cut, it drops every connection it carries and refuses
// new ones, as a network partition or a dead load balancer would. It cuts
// when told (Cut), once clients have sent a number of bytes (CutAfter),
// and, when it knows the protocol it carries, PostgreSQL's or MySQL's,
// before or after the nth statement that clients send (CutAtStatement).
//
// It can also freeze a single connection, as a route that drops packets
// while both ends stay up would: before or after the first statement that
// a matcher picks (FreezeAt, FreezeAtStatement), the connection that
// carries it goes silent in both directions, and neither end is told. The
// client waits for its reply until its own deadline, the server keeps the
// session, with its transaction and its locks, until a timeout of its own
// ends it, and every other connection carries on.
package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// A Protocol is the wire protocol that a Proxy carries. The proxy parses
// no more of it than the framing of messages.
type Protocol int

const (
	// TCP is bytes that the proxy does not parse: it counts no statements.
	TCP Protocol = iota
	// PostgreSQL is PostgreSQL's frontend/backend protocol, version 3. The
	// proxy answers a client's SSLRequest or GSSENCRequest itself, with a
	// no, so that sessions stay in plaintext: a client that requires
	// encryption (sslmode=require) cannot connect.
	PostgreSQL
	// MySQL is the client/server protocol of MySQL and MariaDB, in plain
	// packets. The proxy withdraws the server's offer of TLS and of
	// compression from its greeting, so that sessions stay plain: a
	// client that requires TLS (tls=true) cannot connect.
	MySQL
)

// String returns the name of the protocol.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// dialect returns the framing of one connection of the protocol.
func (p Protocol) dialect() dialect {
	switch p {
	case PostgreSQL:
		return newPostgresConn()
	case MySQL:
		return newMySQLConn()
	}
	return tcpConn{}
}

// A Proxy forwards the connections it accepts to a target address.
type Proxy struct {
	target   string
	protocol Protocol
	listener net.Listener

	// budget is how many more bytes may go from clients to the server
	// before the proxy cuts itself, while metering (CutAfter).
	budget   atomic.Int64
	metering atomic.Bool

	mu       sync.Mutex
	cut      bool
	refusing bool // new connections only (Refuse)
	links    map[*link]struct{}
	stmts    statementTrap
	wg       sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards TCP to target.
func Start(target string) (*Proxy, error) { return StartProtocol(target, TCP) }

// StartProtocol listens on a free port of 127.0.0.1 and forwards to target,
// which speaks protocol.
func StartProtocol(target string, protocol Protocol) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, protocol: protocol, listener: l, links: map[*link]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// ForURL starts a proxy to the host of a database URL and returns it with
// the URL that goes through it. The proxy carries PostgreSQL for a
// postgres:// or postgresql:// URL, else TCP.
func ForURL(rawURL string) (*Proxy, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", err
	}
	protocol := TCP
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		protocol = PostgreSQL
	}
	p, err := StartProtocol(u.Host, protocol)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Cut drops every connection, frozen ones included, and refuses new ones
// until Restore. A dropped connection closes on the client's side at once;
// on the server's side the proxy ends the stream after the bytes the
// server got, so that the server sees the client go after them, and closes
// the connection once the server has.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.dropLocked()
}

// CutAfter cuts the proxy once n more bytes have gone from its clients to
// the server, in the middle of whatever message those bytes belong to: the
// server gets the first part of it and then loses the connection, as when
// a network fails mid-statement. Restore disarms it.
func (p *Proxy) CutAfter(n int64) {
	p.budget.Store(n)
	p.metering.Store(true)
}

// IsCut reports whether the proxy is cut (by Cut, or by CutAfter or
// CutAtStatement once they fired): it refuses new connections until
// Restore, and WaitIdle tells when the server is done with what it got.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// spend counts b against the budget of CutAfter and returns the part of b
// within it, and whether b spent the budget, in which case the proxy is
// cut: it refuses new connections, and the caller drops the open ones once
// it has sent what it may.
func (p *Proxy) spend(b []byte) ([]byte, bool) {
	if len(b) == 0 || !p.metering.Load() {
		return b, false
	}
	left := p.budget.Add(-int64(len(b)))
	if left > 0 {
		return b, false
	}
	p.metering.Store(false)
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	return b[:max(len(b)+int(left), 0)], true
}

// Refuse closes every new connection at once, until Restore, and leaves
// the open ones as they are: a route on which a second connection, such
// as PostgreSQL's cancel request, cannot be made.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = true
}

// Restore lets connections through again, and disarms CutAfter,
// CutAtStatement and FreezeAt. A connection that carries the statement of
// an After cut which has fired, but which the proxy has not cut yet, is
// dropped. A frozen connection stays frozen, for the route does not heal,
// and one that waits for the trail of an After freeze freezes without it.
func (p *Proxy) Restore() {
	p.metering.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.refusing = false, false
	p.stmts.disarm()
}

// WaitIdle waits until the proxy carries no connection, or ctx ends.
// Called after a cut and before Restore, while the proxy refuses new
// connections, it returns once the server has closed every connection that
// the cut dropped, having handled all that it got of each: the database
// then holds whatever the clients cut off will ever have done. A frozen
// connection counts until both its sides have closed.
func (p *Proxy) WaitIdle(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !p.idle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func (p *Proxy) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links) == 0
}

// Close stops the proxy and closes its connections, frozen ones included,
// on both sides at once; it returns once every goroutine of the proxy has.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.mu.Lock()
	p.cut = true
	for l := range p.links {
		l.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		client, err := p.listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.wg.Go(func() { p.forward(client) })
	}
}

// forward carries one connection, unless the proxy is cut.
func (p *Proxy) forward(client net.Conn) {
	server, err := p.dial()
	if err != nil {
		client.Close()
		return
	}
	l := &link{p: p, client: client, server: server, dialect: p.protocol.dialect()}
	if !p.track(l) {
		return
	}
	var halves sync.WaitGroup
	halves.Go(l.up)
	halves.Go(l.down)
	halves.Wait()
	p.untrack(l)
}

func (p *Proxy) dial() (*net.TCPConn, error) {
	p.mu.Lock()
	closed := p.cut || p.refusing
	p.mu.Unlock()
	if closed {
		return nil, errors.New("netproxy: cut or refusing")
	}
	c, err := net.Dial("tcp", p.target)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// track records a link, or closes it when the proxy was cut meanwhile.
func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		l.close()
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
	l.close()
}

// admit decides what of the messages that l framed goes to the server,
// counting the statements they begin while CutAtStatement or FreezeAt is
// armed.
func (p *Proxy) admit(l *link, msgs []message) verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	var v verdict
	for _, m := range msgs {
		if p.cut || p.stmts.sealed(l) {
			v.stop = true
			break
		}
		if m.answer != nil {
			v.answer = append(v.answer, m.answer...)
			continue
		}
		act := p.stmts.decide(l, m)
		if act != stopBefore {
			v.forward = append(v.forward, m.bytes...)
		}
		if act != pass {
			v.stop, v.cut = true, !p.stmts.freezes
			p.cut = v.cut
			break
		}
	}
	return v
}

// settle ends the trail of l, which carries nothing more, when l carries
// the statement of an After cut or freeze that has fired: its client went
// or sent nothing more behind it. The proxy then cuts, or l stays frozen.
func (p *Proxy) settle(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stmts.carrier != l {
		return
	}
	p.stmts.carrier = nil
	if !p.stmts.freezes {
		p.cut = true
		p.dropLocked()
	}
}

// trailing reports whether l waits for the Sync behind the statement of an
// After cut or freeze.
func (p *Proxy) trailing(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stmts.trailing(l)
}

// dropAll drops every connection without changing whether the proxy is
// cut.
func (p *Proxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked()
}

func (p *Proxy) dropLocked() {
	for l := range p.links {
		l.drop()
	}
}
