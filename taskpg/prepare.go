package taskpg

import (
	"context"
	"crypto/sha256"
	endian "encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// A round trip of taskpg's own (a pipeline on a pool, or on a connection
// outside any transaction) sends its statements prepared: each is prepared
// once per connection, under a name made of its text and parameter types,
// and every later call sends only Bind and Execute. At everyday rates the
// server spends more time parsing, analysing and rewriting the statements
// of a task's life than running them (docs/performance.md). A round trip
// of statements on task first sets plan_cache_mode to force_custom_plan
// for its own implicit transaction (setCustomPlans), so that every call is
// still planned for its arguments, as an unnamed statement is (see
// pipeline): a generic plan would lock every partition of task and would
// keep the shape it had when the partition was small. A round trip whose
// statements name a topic's partition instead runs them from generic
// plans (setGenericPlans, see partition.go).
//
// A connection that loses one of these statements (DEALLOCATE, DISCARD
// ALL, or a pooler in transaction mode that hands each round trip to
// another server connection) gets unnamed statements from then on: the
// round trip that failed rolled back, and is sent again, unnamed. Inside a
// caller's transaction, statements are always unnamed: there, a lost
// statement would abort the caller's transaction.

// setCustomPlans sets plan_cache_mode until the end of the round trip's
// implicit transaction.
const setCustomPlans = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// maxPrepared bounds the statements prepared on one connection; a
// connection that has as many sends the others unnamed. The statements of
// a repository number a few dozen, their variants included.
const maxPrepared = 256

// preparedKey is where what taskpg prepared on a connection is kept, in
// pgconn's CustomData, which lives and dies with the connection.
const preparedKey = "github.com/taskrepo/taskrepo/taskpg.prepared"

// prepared is what taskpg prepared on one connection: the names of its
// statements by text and parameter types, or off once the connection lost
// one. Found by their text, they cost a call no hash of it: a poll's text
// runs to kilobytes.
type prepared struct {
	names map[statementKey]string
	off   bool
}

// statementKey is a statement's text and the OIDs of its parameters' types
// (4 bytes each).
type statementKey struct{ sql, oids string }

// keyOf returns the key of sql for parameters of the types oids.
func keyOf(sql string, oids []uint32) statementKey {
	types := make([]byte, 0, 4*len(oids))
	for _, oid := range oids {
		types = endian.BigEndian.AppendUint32(types, oid)
	}
	return statementKey{sql: sql, oids: string(types)}
}

// preparedOf returns what taskpg prepared on conn.
func preparedOf(conn *pgconn.PgConn) *prepared {
	p, ok := conn.CustomData()[preparedKey].(*prepared)
	if !ok {
		p = &prepared{names: map[statementKey]string{}}
		conn.CustomData()[preparedKey] = p
	}
	return p
}

// statementName returns the name of sql prepared for parameters of the
// types oids: a statement sent with other types is another statement.
func statementName(sql string, oids []uint32) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v", sql, oids)
	return "taskrepo_" + hex.EncodeToString(h.Sum(nil)[:12])
}

// prepare prepares sql for oids on conn unless it is already, and returns
// its name; "" for an unnamed statement: when conn holds maxPrepared
// statements already, or lost one.
func prepare(ctx context.Context, conn *pgconn.PgConn, sql string, oids []uint32) (string, error) {
	p, key := preparedOf(conn), keyOf(sql, oids)
	if name, ok := p.names[key]; ok {
		return name, nil
	}
	if p.off || len(p.names) >= maxPrepared {
		return "", nil
	}
	name := statementName(sql, oids)
	if _, err := conn.Prepare(ctx, name, sql, oids); err != nil && !isCode(err, "42P05") { // duplicate_prepared_statement
		return "", err
	}
	p.names[key] = name
	return name, nil
}

// lostStatement tells whether err says that the server no longer holds a
// statement as it was prepared: it was deallocated
// (invalid_sql_statement_name), or its result changed type after the table
// did.
func lostStatement(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "26000" ||
		pgErr.Code == "0A000" && pgErr.Message == "cached plan must not change result type")
}

// stopPreparing deallocates the statements prepared on conn, and has it
// send unnamed statements from then on.
func stopPreparing(ctx context.Context, conn *pgconn.PgConn) {
	p := preparedOf(conn)
	for _, name := range p.names {
		_ = conn.Deallocate(ctx, name) // a lost one is not there to deallocate
	}
	p.names, p.off = map[statementKey]string{}, true
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}
