// Package netproxy is a TCP proxy for tests that cut a client off from its
// database: while cut, it drops every connection it carries and refuses
// new ones, as a network partition or a dead load balancer would.
package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// A Proxy forwards the connections it accepts to a target address.
type Proxy struct {
	target   string
	listener net.Listener

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

// Restore lets connections through again.
func (p *Proxy) Restore() {
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
	copies.Go(func() { pipe(server, client) })
	copies.Go(func() { pipe(client, server) })
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

// pipe copies from src to dst, and closes both when either side ends.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}
