package netproxy

import (
	"fmt"
	"time"
)

// A Mode says where CutAtStatement cuts, or FreezeAt freezes.
type Mode int

const (
	// Before cuts or freezes in place of the statement: the server gets
	// none of it.
	Before Mode = iota + 1
	// After cuts or freezes once the server has the whole statement,
	// before its reply reaches the client.
	After
)

// String returns "before" or "after".
func (m Mode) String() string {
	switch m {
	case Before:
		return "before"
	case After:
		return "after"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// A Statement is a statement that a client sent, as the proxy counted it.
type Statement struct {
	// N is its number: 1 for the first statement after CutAtStatement or
	// FreezeAt.
	N int
	// Message names the message that began it: Query, Parse, Bind or
	// Execute in PostgreSQL; COM_QUERY, COM_STMT_PREPARE or
	// COM_STMT_EXECUTE in MySQL.
	Message string
	// SQL is its text: that of the message when it carries one (Query,
	// Parse, COM_QUERY, COM_STMT_PREPARE), else that of the prepared
	// statement it executes as the connection prepared it, else the
	// prepared statement's name (PostgreSQL) or number (MySQL), else empty.
	SQL string
}

// String returns the message and the text of s, as in `Query "commit"`.
func (s Statement) String() string { return fmt.Sprintf("%s %q", s.Message, s.SQL) }

// CutAtStatement arms a cut at the nth statement that clients send, on any
// connection of the proxy, from now on: n = 1 is the next one. Statements
// are numbered in the order in which the proxy sees them begin; a
// statement that began before the call does not count, and other
// connections are not held while statement n goes through.
//
// Before cuts the proxy in place of statement n: the server gets every
// byte that came before it and none of it. After lets statement n through
// whole and cuts the proxy before any reply of the server to it reaches the
// client: the server executes it, and when it is a COMMIT, commits what the
// client cannot know to be committed. Either way the proxy then drops every
// connection and refuses new ones until Restore, as Cut does; WaitIdle
// waits for the server to have handled what it got. Fired and Statements
// tell what happened. CutAtStatement replaces the cut or freeze armed
// before (see FreezeAt).
//
// What counts as a statement depends on the protocol:
//
//   - PostgreSQL: a simple Query message, however many SQL statements its
//     text holds. In the extended protocol, a statement begins with a Parse,
//     Bind or Execute when none has begun, and ends with an Execute, or
//     with a Sync when no Execute came: each execution is a statement, and
//     so is a round trip that only prepares (Parse, Describe, Sync), so
//     that pgx's first execution of a statement it caches is two. A
//     pipeline of several executions with one Sync is several statements.
//     After lets through, behind an Execute, the messages up to and
//     including the next Sync, for the server commits an implicit
//     transaction at the Sync, unless another statement begins first (the
//     Sync then never reaches the server) or the client sends nothing for
//     200 ms (it waits, after a Flush, for a reply that will not come).
//     The startup, passwords, Describe, Close, Sync, Flush, COPY data and
//     function calls are not statements.
//   - MySQL: a COM_QUERY, COM_STMT_PREPARE or COM_STMT_EXECUTE command
//     (a packet of sequence number 0 after the handshake; a command of 16
//     MiB or more ends with the last packet that continues it). The
//     handshake, COM_STMT_CLOSE, COM_PING, COM_QUIT and the other commands
//     are not statements.
//
// A client's liveness checks count when they are statements: pgx's pool and
// database/sql on pgx ping a connection that has been idle for a second
// with a Query "-- ping". And a
// client's pool keeps the connections that a cut dropped until it uses
// them and fails, without sending a statement: a test that runs a code
// path once per n opens a fresh pool per run.
//
// CutAtStatement panics when n < 1, when mode is neither Before nor After,
// or on a proxy that carries TCP, in which it would never fire.
func (p *Proxy) CutAtStatement(n int, mode Mode) {
	if n < 1 || p.protocol == TCP || (mode != Before && mode != After) {
		panic(fmt.Sprintf("netproxy: CutAtStatement(%d, %v) on a proxy of %v", n, mode, p.protocol))
	}
	p.arm(statementTrap{match: nth(n), mode: mode})
}

// nth returns a matcher of the nth statement.
func nth(n int) func(Statement) bool {
	return func(s Statement) bool { return s.N == n }
}

// arm replaces the statement trap armed before, if any, with t, which
// starts counting.
func (p *Proxy) arm(t statementTrap) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stmts.disarm()
	t.armed = true
	p.stmts = t
}

// Fired reports whether the cut that CutAtStatement, or the freeze that
// FreezeAt, armed last has fired, and at which statement: once that
// statement has begun. It still tells after Restore.
func (p *Proxy) Fired() (Statement, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stmts
	if !s.fired {
		return Statement{}, false
	}
	return s.seen[len(s.seen)-1], true
}

// Statements returns the statements counted since CutAtStatement or
// FreezeAt, whichever came last, up to and including the one at which
// its cut or freeze fired, if it did, or up to Restore.
func (p *Proxy) Statements() []Statement {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Statement(nil), p.stmts.seen...)
}

// trailPatience is how long an After cut or freeze waits for the Sync
// behind the statement it let through.
const trailPatience = 200 * time.Millisecond

// statementTrap is the state of CutAtStatement or FreezeAt, whichever
// armed last, guarded by Proxy.mu.
type statementTrap struct {
	armed bool // counting, from CutAtStatement or FreezeAt until Restore
	match func(Statement) bool
	mode  Mode
	// freezes says that the trap freezes the link that carries the
	// statement, instead of cutting the proxy.
	freezes bool
	seen    []Statement
	fired   bool
	// carrier is the link that carries the statement of an After trap
	// until the proxy cuts or the link freezes in full; ended says that
	// the statement has ended and the link lets its trail (up to a Sync)
	// through.
	carrier *link
	ended   bool
}

// An action is what the proxy does with a message of a client.
type action int

const (
	pass       action = iota // forward it
	stopBefore               // cut or freeze without forwarding it
	stopAfter                // forward it, then cut or freeze
)

// decide counts the statement that m begins, if any, and returns what to
// do with m, which link l framed.
func (s *statementTrap) decide(l *link, m message) action {
	if s.carrier == l && s.ended {
		return s.trail(m)
	}
	if m.begins && s.armed && !s.fired && s.count(m) {
		s.fired = true
		if s.freezes {
			l.freeze()
		}
		if s.mode == Before {
			return stopBefore
		}
		s.carrier = l
		l.muted.Store(true) // before the statement goes: nothing of the reply may pass
	}
	if s.carrier != l || !m.ends {
		return pass
	}
	if m.settles {
		s.carrier = nil
		return stopAfter
	}
	s.ended = true
	return pass
}

// count records the statement that m begins and reports whether it is the
// one at which the trap fires.
func (s *statementTrap) count(m message) bool {
	st := Statement{N: len(s.seen) + 1, Message: m.what, SQL: m.sql}
	s.seen = append(s.seen, st)
	return s.match(st)
}

// trail decides on a message behind the statement of an After trap, which
// has ended but which the server does not execute in full before a Sync.
func (s *statementTrap) trail(m message) action {
	switch {
	case m.begins:
		s.carrier = nil
		return stopBefore
	case m.settles:
		s.carrier = nil
		return stopAfter
	}
	return pass
}

// trailing reports whether l waits for the Sync behind the statement of an
// After trap.
func (s *statementTrap) trailing(l *link) bool { return s.carrier == l && s.ended }

// sealed reports whether l is frozen and lets nothing more through: it
// carries no trail, or no longer.
func (s *statementTrap) sealed(l *link) bool { return l.frozen.Load() && s.carrier != l }

// disarm stops counting. A link that carries the statement of an After
// cut is dropped, for its client would never get a reply; one that
// carries that of an After freeze stays frozen without the rest of its
// trail.
func (s *statementTrap) disarm() {
	s.armed = false
	if s.carrier != nil && !s.freezes {
		s.carrier.drop()
	}
	s.carrier = nil
}
