// Package netproxy is a TCP proxy for tests that cut a client off from its
// database: while cut, it drops every connection it carries and refuses
// new ones, as a network partition or a dead load balancer would.
package netproxy

import (
	"errors"
	"io"
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
	// before the proxy cuts itself, while armed (CutAfter).
	budget atomic.Int64
	armed  atomic.Bool

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards to target.
func Start(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, listener: l, conns: map[net.Conn]struct{}{}}
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

// Cut drops every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// CutAfter cuts the proxy once n more bytes have gone from its clients to
// the server, in the middle of whatever message those bytes belong to: the
// server gets the first part of it and then loses the connection, as when
// a network fails mid-statement. Restore disarms it.
func (p *Proxy) CutAfter(n int64) {
	p.budget.Store(n)
	p.armed.Store(true)
}

// errBudget ends the copy that spent the budget of CutAfter.
var errBudget = errors.New("netproxy: byte budget spent")

// metered counts the bytes a client sends against the budget of CutAfter,
// and lets through only those within it.
type metered struct {
	p *Proxy
	r io.Reader
}

func (m metered) Read(b []byte) (int, error) {
	n, err := m.r.Read(b)
	if n <= 0 || !m.p.armed.Load() {
		return n, err
	}
	if left := m.p.budget.Add(-int64(n)); left <= 0 {
		m.p.armed.Store(false)
		m.p.mu.Lock()
		m.p.cut = true // refuse new connections now; the copy drops the open ones once it has passed the bytes within the budget
		m.p.mu.Unlock()
		return max(n+int(left), 0), errBudget
	}
	return n, err
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.armed.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy and drops its connections; it returns once every
// goroutine of the proxy has.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.Cut()
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
	if !p.track(client, server) {
		return
	}
	var copies sync.WaitGroup
	copies.Go(func() {
		if pipe(server, client, metered{p, client}) == errBudget {
			p.Cut()
		}
	})
	copies.Go(func() { _ = pipe(client, server, server) })
	copies.Wait()
	p.untrack(client, server)
}

func (p *Proxy) dial() (net.Conn, error) {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		return nil, errors.New("netproxy: cut")
	}
	return net.Dial("tcp", p.target)
}

// track records a pair of connections, or closes both when the proxy was
// cut meanwhile.
func (p *Proxy) track(client, server net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		client.Close()
		server.Close()
		return false
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) untrack(client, server net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, client)
	delete(p.conns, server)
	client.Close()
	server.Close()
}

// pipe copies what r reads from src to dst, closes both when either side
// ends, and returns why the copy ended.
func pipe(dst, src net.Conn, r io.Reader) error {
	_, err := io.Copy(dst, r)
	dst.Close()
	src.Close()
	return err
}
