package netproxy

import (
	"bytes"
	"encoding/binary"
)

// Codes of PostgreSQL's untyped messages that precede the startup message.
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
	// pgMaxStartup bounds an untyped message, as the server does.
	pgMaxStartup = 10000
)

// postgresConn frames what a PostgreSQL client sends: untyped messages up
// to the startup message, then messages of a type byte and a length.
type postgresConn struct {
	started bool // the startup message has gone by
	raw     bool // the stream did not parse: the rest passes unframed
	open    bool // an extended-protocol statement has begun and not ended
	// prepared maps the names of the statements the connection prepared,
	// "" for the unnamed one, to their text.
	prepared map[string]string
}

func newPostgresConn() *postgresConn {
	return &postgresConn{prepared: map[string]string{}}
}

func (c *postgresConn) fromClient(b []byte) (message, bool) {
	switch {
	case c.raw:
		return message{bytes: b}, len(b) > 0
	case !c.started:
		return c.untyped(b)
	}
	return c.typed(b)
}

// The server's side needs no framing: its messages go as they come.
func (c *postgresConn) fromServer(b []byte) int { return len(b) }

// untyped frames a message before the startup message: the proxy answers
// an SSLRequest or a GSSENCRequest itself with a no, so that the session
// stays in plaintext, which it can parse.
func (c *postgresConn) untyped(b []byte) (message, bool) {
	if len(b) < 8 {
		return message{}, false
	}
	size := int(binary.BigEndian.Uint32(b))
	if size < 8 || size > pgMaxStartup {
		c.raw = true
		return c.fromClient(b)
	}
	if len(b) < size {
		return message{}, false
	}
	m := message{bytes: b[:size]}
	switch binary.BigEndian.Uint32(b[4:]) {
	case pgSSLRequest, pgGSSENCRequest:
		m.answer = []byte{'N'}
	default: // the startup message, or a CancelRequest, after which the client says nothing more
		c.started = true
	}
	return m, true
}

// typed frames a message of a type byte and a length.
func (c *postgresConn) typed(b []byte) (message, bool) {
	if len(b) < 5 {
		return message{}, false
	}
	size := 1 + int(binary.BigEndian.Uint32(b[1:]))
	if size < 5 {
		c.raw = true
		return c.fromClient(b)
	}
	if len(b) < size {
		return message{}, false
	}
	m := c.classify(b[0], b[5:size])
	m.bytes = b[:size]
	return m, true
}

// classify says what a message of type typ and body body does to
// statements (see CutAtStatement).
func (c *postgresConn) classify(typ byte, body []byte) message {
	switch typ {
	case 'Q':
		c.open = false
		sql, _ := cstring(body)
		return message{begins: true, ends: true, settles: true, what: "Query", sql: sql}
	case 'P':
		name, rest := cstring(body)
		sql, _ := cstring(rest)
		c.prepared[name] = sql
		return c.begin("Parse", sql)
	case 'B':
		_, rest := cstring(body) // the portal
		name, _ := cstring(rest)
		return c.begin("Bind", c.text(name))
	case 'E':
		m := c.begin("Execute", "")
		m.ends, c.open = true, false
		return m
	case 'S':
		m := message{ends: c.open, settles: true}
		c.open = false
		return m
	case 'C':
		c.forget(body)
	}
	return message{}
}

// begin returns a message that begins a statement, unless one has begun.
func (c *postgresConn) begin(what, sql string) message {
	if c.open {
		return message{}
	}
	c.open = true
	return message{begins: true, what: what, sql: sql}
}

// text returns the text of the prepared statement name, or its name when
// no Parse prepared it (a Query "PREPARE name AS ..." did).
func (c *postgresConn) text(name string) string {
	if sql, ok := c.prepared[name]; ok {
		return sql
	}
	return name
}

// forget drops the statement that a Close message of body closes.
func (c *postgresConn) forget(body []byte) {
	if len(body) > 0 && body[0] == 'S' {
		name, _ := cstring(body[1:])
		delete(c.prepared, name)
	}
}

// cstring splits b after its first NUL, which ends the string it returns.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}
