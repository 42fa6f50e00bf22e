package netproxy

import (
	"net"
	"sync/atomic"
	"time"
)

// A link is a client's connection and the proxy's connection to the server
// on its behalf.
type link struct {
	p       *Proxy
	client  net.Conn
	server  *net.TCPConn
	dialect dialect
	// muted keeps what the server sends from the client, from the moment
	// the statement of an After cut goes to the server, or the link
	// freezes.
	muted atomic.Bool
	// frozen says that the link froze (see FreezeAt): it closes neither
	// connection, and forwards nothing more once the trail of an After
	// freeze has gone.
	frozen atomic.Bool
}

// bufSize is how many bytes a link reads at once.
const bufSize = 32 << 10

// A message is a whole message that a client sent, as the dialect of its
// connection frames it.
type message struct {
	bytes  []byte
	answer []byte // the proxy's own reply, sent to the client instead of forwarding the message
	// begins and ends say that the message begins or ends a statement
	// (see CutAtStatement); what names the message that begins one, and
	// sql is the statement's text.
	begins, ends bool
	what, sql    string
	// settles says that the server executes what it got and replies once
	// it has the message: a simple Query, a Sync, a MySQL command.
	settles bool
}

// A dialect frames the traffic of one connection.
type dialect interface {
	// fromClient returns the first message of b, which holds what the
	// client sent that the proxy has not framed yet, or false when b holds
	// only part of one.
	fromClient(b []byte) (message, bool)
	// fromServer returns how many bytes at the start of b, which holds what
	// the server sent that the proxy has not passed on yet, may go to the
	// client now.
	fromServer(b []byte) int
}

// tcpConn is the dialect of bytes the proxy does not parse.
type tcpConn struct{}

func (tcpConn) fromClient(b []byte) (message, bool) { return message{bytes: b}, len(b) > 0 }

func (tcpConn) fromServer(b []byte) int { return len(b) }

// A verdict is what the proxy does with the messages of one read from a
// client.
type verdict struct {
	forward []byte // what goes to the server
	answer  []byte // what the proxy replies to the client itself
	stop    bool   // the link carries nothing more: it is cut, or frozen
	cut     bool   // the proxy cut itself: drop every connection once forward is sent
}

// up carries what the client sends to the server, in whole messages, until
// the client goes or the link is stopped; then the server reads the end of
// the stream after what it got, unless the link froze: then what the
// client sends goes nowhere, and the server hears nothing more.
func (l *link) up() {
	l.carry()
	l.p.settle(l)
	if l.frozen.Load() {
		l.sink()
		return
	}
	_ = l.server.CloseWrite()
}

// carry passes what the client sends until it goes or the link is
// stopped.
func (l *link) carry() {
	buf := make([]byte, bufSize)
	var pending []byte
	for {
		n, err := l.read(buf)
		pending = append(pending, buf[:n]...)
		used, more := l.pass(pending)
		pending = compact(pending, used)
		if !more || err != nil {
			return
		}
	}
}

// read reads from the client, for no longer than trailPatience when the
// link waits for the Sync behind the statement of an After cut or freeze.
func (l *link) read(buf []byte) (int, error) {
	if l.p.trailing(l) {
		_ = l.client.SetReadDeadline(time.Now().Add(trailPatience))
	}
	return l.client.Read(buf)
}

// pass frames the whole messages at the start of b, sends on what the
// proxy lets through of them, and returns how many bytes of b it framed,
// and false once the link is to carry nothing more.
func (l *link) pass(b []byte) (int, bool) {
	msgs, used := l.frame(b)
	v := l.p.admit(l, msgs)
	var spent bool
	v.forward, spent = l.p.spend(v.forward)
	v.cut, v.stop = v.cut || spent, v.stop || spent
	ok := send(l.client, v.answer) && send(l.server, v.forward)
	if v.cut {
		l.p.dropAll()
	}
	return used, ok && !v.stop
}

// send writes b, if any, to c and reports whether it could.
func send(c net.Conn, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	_, err := c.Write(b)
	return err == nil
}

// frame returns the whole messages at the start of b and their length.
func (l *link) frame(b []byte) (msgs []message, used int) {
	for {
		m, ok := l.dialect.fromClient(b[used:])
		if !ok {
			return msgs, used
		}
		msgs = append(msgs, m)
		used += len(m.bytes)
	}
}

// down carries what the server sends to the client until the server ends
// the session, and then closes the client's connection, unless the link
// froze: the client is not told. Once the client is gone, or the link
// muted, what the server sends goes nowhere: a dropped link lives until
// the server has read the end of the stream and closed its side.
func (l *link) down() {
	l.relay()
	if !l.frozen.Load() {
		l.client.Close()
	}
}

// relay passes what the server sends until it ends the session.
func (l *link) relay() {
	buf := make([]byte, bufSize)
	var pending []byte
	gone := false
	for {
		n, err := l.server.Read(buf)
		pending = append(pending, buf[:n]...)
		ready := l.dialect.fromServer(pending)
		gone = gone || l.muted.Load() || !send(l.client, pending[:ready])
		pending = compact(pending, ready)
		if err != nil {
			return
		}
	}
}

// drop cuts the client off at once, and ends the stream to the server
// after what it got, so that the server handles all of it before it sees
// the client go.
func (l *link) drop() {
	l.client.Close()
	_ = l.server.CloseWrite()
}

// close closes both connections at once.
func (l *link) close() {
	l.client.Close()
	l.server.Close()
}

// compact moves the bytes of b after its first used ones to its start.
func compact(b []byte, used int) []byte {
	return b[:copy(b, b[used:])]
}
