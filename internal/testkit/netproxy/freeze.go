package netproxy

import (
	"fmt"
	"time"
)

// FreezeAt arms a freeze at the first statement that clients send, on any
// connection of the proxy, from now on, for which match returns true.
// Statements are framed, numbered and reported as for CutAtStatement, and
// the After mode lets the same trail through behind an Execute, up to the
// next Sync. match sees each statement as Statements lists it, one at a
// time and with the proxy's lock held: it must not call the proxy.
// FreezeAt replaces the cut or freeze armed before, and Fired and
// Statements then tell about this one.
//
// When the freeze fires, the connection that carries the statement, and
// it alone, freezes: the proxy is not cut, and its other connections, and
// new ones, carry on. Before freezes in place of the statement: the server
// gets every byte that came before it and none of it. After lets the
// statement through whole, and its trail: the server executes it, and when
// it is a COMMIT commits, but no byte of its reply reaches the client.
//
// A frozen connection is a black hole: the proxy forwards nothing more on
// it, in either direction, and closes neither side. It reads and discards
// what either side sends, so that no write blocks, and delivers none of it
// later. The client waits until it gives up by a deadline of its own, and
// the server keeps the session, with its transaction and its locks, until
// it ends it itself (idle_in_transaction_session_timeout, statement_timeout,
// MariaDB's idle_transaction_timeout, wait_timeout). When one side closes,
// the other is not told; the proxy lets go of the connection once both
// have closed, or when Cut or Close drops it. Restore disarms a freeze
// that has not fired, but thaws no frozen connection. Frozen counts them.
//
// pgx, whose deadline has passed, sends a CancelRequest on a connection of
// its own, which the proxy forwards, and then waits up to 15 s for the
// server to close the frozen connection before it closes its side.
//
// FreezeAt panics when match is nil, when mode is neither Before nor
// After, or on a proxy that carries TCP, in which it would never fire.
func (p *Proxy) FreezeAt(match func(Statement) bool, mode Mode) {
	if match == nil || p.protocol == TCP || (mode != Before && mode != After) {
		panic(fmt.Sprintf("netproxy: FreezeAt(%p, %v) on a proxy of %v", match, mode, p.protocol))
	}
	p.arm(statementTrap{match: match, mode: mode, freezes: true})
}

// FreezeAtStatement arms a freeze at the nth statement that clients send,
// on any connection of the proxy, from now on, as FreezeAt does: n = 1 is
// the next one. It panics when n < 1, and where FreezeAt does.
func (p *Proxy) FreezeAtStatement(n int, mode Mode) {
	if n < 1 {
		panic(fmt.Sprintf("netproxy: FreezeAtStatement(%d, %v)", n, mode))
	}
	p.FreezeAt(nth(n), mode)
}

// Frozen returns how many connections of the proxy are frozen and still
// open on at least one side. A connection counts from the moment its
// statement begins: After, its trail may still be on its way.
func (p *Proxy) Frozen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		if l.frozen.Load() {
			n++
		}
	}
	return n
}

// freeze makes l a black hole, from the statement at which a freeze fired:
// nothing more of the server's reaches the client, and neither connection
// closes.
func (l *link) freeze() {
	l.muted.Store(true)
	l.frozen.Store(true)
}

// sink reads and discards what the client of a frozen link sends, so that
// its writes do not block, until it closes its connection or the proxy
// drops or closes the link.
func (l *link) sink() {
	_ = l.client.SetReadDeadline(time.Time{}) // lifts the patience of an After trail
	buf := make([]byte, bufSize)
	for {
		if _, err := l.client.Read(buf); err != nil {
			return
		}
	}
}
