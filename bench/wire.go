package main

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// wireCounter counts what the connections of a scenario's pool send to the
// server, read off the wire: every statement (a simple Query message, or an
// Execute of the extended protocol: one per statement of a batch) and every
// round trip (a Query, or a Sync that ends a batch of extended messages).
// It is set as the pool's dialer, which taskpg's Notifier and River's
// listener copy with the pool's configuration, so their LISTEN connections
// are counted too, pings included: what the server hears, which a pgx
// tracer on the pool would miss (pings and LISTENs bypass it).
type wireCounter struct {
	statements, roundTrips atomic.Int64
}

// wireCounters holds the counter of each scenario database, by name.
var wireCounters sync.Map

// dial wraps the dialer of a pool's connections so that they are counted.
func (w *wireCounter) dial(next pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, w: w}, nil
	}
}

// wireOf returns the counter of a pool made by bench.fresh.
func wireOf(pool *pgxpool.Pool) *wireCounter {
	if w, ok := wireCounters.Load(pool.Config().ConnConfig.Database); ok {
		return w.(*wireCounter)
	}
	return &wireCounter{} // never: fresh sets one
}

// Frontend messages that the counter counts (PostgreSQL's protocol).
const (
	msgQuery   = 'Q'
	msgExecute = 'E'
	msgSync    = 'S'
	// The first message of a connection has no type byte; these request
	// codes ask for encryption, after which the bytes are no longer
	// messages.
	sslRequest    = 80877103
	gssencRequest = 80877104
)

// countingConn follows the messages written to a connection. Writes may
// cut a message anywhere, so it keeps the header read so far and how much
// of the current message is left to skip. Over TLS (sslmode other than
// disable) it sees no messages and counts nothing.
type countingConn struct {
	net.Conn
	w       *wireCounter
	typed   bool    // past the untyped startup message
	head    [8]byte // the header being read
	headLen int
	skip    int // bytes of the current message still to pass
}

// Write counts the messages in p and sends p on.
func (c *countingConn) Write(p []byte) (int, error) {
	c.follow(p)
	return c.Conn.Write(p)
}

// follow reads the message headers in p.
func (c *countingConn) follow(p []byte) {
	for len(p) > 0 {
		if c.skip > 0 {
			n := min(c.skip, len(p))
			c.skip -= n
			p = p[n:]
			continue
		}
		need := 5 // type and length
		if !c.typed {
			need = 8 // length and protocol version or request code
		}
		n := copy(c.head[c.headLen:need], p)
		c.headLen += n
		p = p[n:]
		if c.headLen == need {
			c.message()
		}
	}
}

// message takes a complete header.
func (c *countingConn) message() {
	c.headLen = 0
	if !c.typed {
		length := int(binary.BigEndian.Uint32(c.head[:4]))
		code := binary.BigEndian.Uint32(c.head[4:8])
		// After an encryption request, the next message is untyped
		// again (the server said no) or encrypted (then its "length" is
		// garbage and nothing more is counted).
		c.typed = code != sslRequest && code != gssencRequest
		c.skip = max(length-8, 0)
		return
	}
	c.skip = max(int(binary.BigEndian.Uint32(c.head[1:5]))-4, 0)
	switch c.head[0] {
	case msgQuery:
		c.w.statements.Add(1)
		c.w.roundTrips.Add(1)
	case msgExecute:
		c.w.statements.Add(1)
	case msgSync:
		c.w.roundTrips.Add(1)
	}
}

// reading is a snapshot of a counter.
type reading struct{ statements, roundTrips int64 }

// read takes a snapshot.
func (w *wireCounter) read() reading {
	return reading{statements: w.statements.Load(), roundTrips: w.roundTrips.Load()}
}

// since returns what was counted after r.
func (w *wireCounter) since(r reading) reading {
	now := w.read()
	return reading{statements: now.statements - r.statements, roundTrips: now.roundTrips - r.roundTrips}
}
