package netproxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/go-sql-driver/mysql"
)

// ForMySQLDSN starts a proxy of MySQL to the server of a go-sql-driver DSN
// such as user:password@tcp(host:3306)/db?parseTime=true, and returns it
// with the DSN that goes through it.
func ForMySQLDSN(dsn string) (*Proxy, string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	if cfg.Net != "tcp" {
		return nil, "", fmt.Errorf("netproxy: the DSN reaches its server over %s, not tcp", cfg.Net)
	}
	p, err := StartProtocol(cfg.Addr, MySQL)
	if err != nil {
		return nil, "", err
	}
	cfg.Addr = p.Addr()
	return p, cfg.FormatDSN(), nil
}

// Facts of MySQL's client/server protocol.
const (
	// myMaxPayload is the payload of a packet that the next one continues.
	myMaxPayload = 1<<24 - 1

	myComQuery       = 0x03
	myComStmtPrepare = 0x16
	myComStmtExecute = 0x17
	myComStmtClose   = 0x19

	myProtocol10     = 10
	myClientCompress = 0x0020
	myClientSSL      = 0x0800
)

// mysqlConn frames the packets of a MySQL connection, each a 3-byte length,
// a sequence number and a payload, in both directions.
type mysqlConn struct {
	open    bool // what the client sends: a command continues in the next packet
	greeted bool // what the server sends: the greeting has gone by

	// mu guards what both directions use: the text of the statements that
	// the server prepared, by number, and that of a COM_STMT_PREPARE that
	// awaits the server's answer.
	mu        sync.Mutex
	prepared  map[uint32]string
	preparing *string
}

func newMySQLConn() *mysqlConn {
	return &mysqlConn{prepared: map[uint32]string{}}
}

func (c *mysqlConn) fromClient(b []byte) (message, bool) {
	payload, seq, ok := myPacket(b)
	if !ok {
		return message{}, false
	}
	whole := len(payload) < myMaxPayload
	var m message
	if seq == 0 { // a command: the handshake's packets and the rest of a command follow in sequence
		m = c.command(payload)
		m.ends, m.settles = whole, whole
	} else if c.open {
		m.ends, m.settles = whole, whole
	}
	c.open = (seq == 0 || c.open) && !whole
	m.bytes = b[:4+len(payload)]
	return m, true
}

// command classifies the command of payload (see CutAtStatement).
func (c *mysqlConn) command(payload []byte) message {
	if len(payload) == 0 {
		return message{}
	}
	switch payload[0] {
	case myComQuery:
		return message{begins: true, what: "COM_QUERY", sql: string(payload[1:])}
	case myComStmtPrepare:
		sql := string(payload[1:])
		c.expect(sql)
		return message{begins: true, what: "COM_STMT_PREPARE", sql: sql}
	case myComStmtExecute:
		return message{begins: true, what: "COM_STMT_EXECUTE", sql: c.text(myStatement(payload))}
	case myComStmtClose:
		c.forget(myStatement(payload))
	}
	return message{}
}

// fromServer lets the whole packets at the start of b go, noting what the
// proxy needs of them.
func (c *mysqlConn) fromServer(b []byte) int {
	used := 0
	for {
		payload, seq, ok := myPacket(b[used:])
		if !ok {
			return used
		}
		if !c.greeted {
			c.greeted = true
			withdraw(payload)
		} else if seq == 1 { // the first packet of an answer
			c.learn(payload)
		}
		used += 4 + len(payload)
	}
}

// withdraw clears, in the server's greeting, its offer of TLS and of
// compression, so that the session stays in plain packets, which the proxy
// can parse: a client that requires TLS cannot connect.
func withdraw(greeting []byte) {
	if len(greeting) == 0 || greeting[0] != myProtocol10 {
		return // an error instead of a greeting
	}
	version := bytes.IndexByte(greeting[1:], 0)
	// The capabilities' lower half follows the server's version, the
	// connection's number, the first 8 bytes of the authentication data and
	// a filler.
	at := 1 + version + 1 + 4 + 8 + 1
	if version < 0 || len(greeting) < at+2 {
		return
	}
	caps := binary.LittleEndian.Uint16(greeting[at:])
	binary.LittleEndian.PutUint16(greeting[at:], caps&^(myClientSSL|myClientCompress))
}

// expect notes the text of a COM_STMT_PREPARE until the server answers.
func (c *mysqlConn) expect(sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.preparing = &sql
}

// learn notes the number of the statement that the server prepared, when
// answer answers a COM_STMT_PREPARE with an OK. The client prepares only
// once it has the whole answer to its previous command, so that this is
// the first packet of an answer since expect.
func (c *mysqlConn) learn(answer []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.preparing == nil {
		return
	}
	if len(answer) >= 5 && answer[0] == 0 {
		c.prepared[binary.LittleEndian.Uint32(answer[1:])] = *c.preparing
	}
	c.preparing = nil
}

// text returns the text of the prepared statement id, or its number.
func (c *mysqlConn) text(id uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sql, ok := c.prepared[id]; ok {
		return sql
	}
	return fmt.Sprintf("statement %d", id)
}

func (c *mysqlConn) forget(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.prepared, id)
}

// myPacket returns the payload and sequence number of the packet at the
// start of b, or false when b holds only part of one.
func myPacket(b []byte) (payload []byte, seq byte, ok bool) {
	if len(b) < 4 {
		return nil, 0, false
	}
	size := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if len(b) < 4+size {
		return nil, 0, false
	}
	return b[4 : 4+size], b[3], true
}

// myStatement returns the number of the statement that a COM_STMT_EXECUTE
// or COM_STMT_CLOSE payload names.
func myStatement(payload []byte) uint32 {
	if len(payload) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint32(payload[1:])
}
