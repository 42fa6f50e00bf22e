// Package netproxy is a TCP proxy for tests that cut a client off from its
// database: while cut, it drops every connection it carries and refuses
// new ones, as a network partition or a dead load balancer would.
package netproxy

import (
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
)

// A Proxy forwards the connections it accepts to a target address.
type Proxy struct {
	target   string
	listener net.Listener

	// budget is how many more bytes may go from clients to the server
	// before the proxy cuts itself, while metering (CutAfter).
	budget   atomic.Int64
	metering atomic.Bool

	mu    sync.Mutex
	cut   bool
	links map[*link]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards to target.
func Start(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, listener: l, links: map[*link]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// ForURL starts a proxy to the host of a database URL such as
// postgres://user@host:5432/db and returns it with the URL that goes
// through it.
func ForURL(rawURL string) (*Proxy, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", err
	}
	p, err := Start(u.Host)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Cut drops every connection and refuses new ones until Restore. A dropped
// connection closes on the client's side at once; on the server's side
// the proxy ends the stream after the bytes the server got, so that the
// server sees the client go after them, and closes the connection once
// the server has.
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

// Restore lets connections through again, and disarms CutAfter.
func (p *Proxy) Restore() {
	p.metering.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy and closes its connections on both sides at once;
// it returns once every goroutine of the proxy has.
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
	l := &link{p: p, client: client, server: server, dialect: tcpConn{}}
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
	cut := p.cut
	p.mu.Unlock()
	if cut {
		return nil, errors.New("netproxy: cut")
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

// admit decides what of the messages that l framed goes to the server.
func (p *Proxy) admit(msgs []message) verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	var v verdict
	for _, m := range msgs {
		if p.cut {
			v.stop = true
			break
		}
		v.forward = append(v.forward, m.bytes...)
	}
	return v
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
