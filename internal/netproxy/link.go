package netproxy

import (
	"net"
)

// A link is a client's connection and the proxy's connection to the server
// on its behalf.
type link struct {
	p       *Proxy
	client  net.Conn
	server  *net.TCPConn
	dialect dialect
}

// bufSize is how many bytes a link reads at once.
const bufSize = 32 << 10

// A message is a whole message that a client sent, as the dialect of its
// connection frames it.
type message struct {
	bytes []byte
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
	stop    bool   // the link carries nothing more
	cut     bool   // the proxy cut itself: drop every connection once forward is sent
}

// up carries what the client sends to the server, in whole messages, until
// the client goes or the link is stopped; then the server reads the end of
// the stream after what it got.
func (l *link) up() {
	defer l.server.CloseWrite()
	buf := make([]byte, bufSize)
	var pending []byte
	for {
		n, err := l.client.Read(buf)
		pending = append(pending, buf[:n]...)
		used, more := l.pass(pending)
		pending = compact(pending, used)
		if !more || err != nil {
			return
		}
	}
}

// pass frames the whole messages at the start of b, sends on what the
// proxy lets through of them, and returns how many bytes of b it framed,
// and false once the link is to carry nothing more.
func (l *link) pass(b []byte) (int, bool) {
	msgs, used := l.frame(b)
	v := l.p.admit(msgs)
	var spent bool
	v.forward, spent = l.p.spend(v.forward)
	v.cut, v.stop = v.cut || spent, v.stop || spent
	ok := send(l.server, v.forward)
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
// the session. Once the client is gone, what the server sends goes nowhere:
// a dropped link lives until the server has read the end of the stream and
// closed its side.
func (l *link) down() {
	defer l.client.Close()
	buf := make([]byte, bufSize)
	var pending []byte
	gone := false
	for {
		n, err := l.server.Read(buf)
		pending = append(pending, buf[:n]...)
		ready := l.dialect.fromServer(pending)
		gone = gone || !send(l.client, pending[:ready])
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
