package taskpg

import (
	"context"
	"crypto/sha256"
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
// of a task's life than running them (docs/performance.md). The round trip
// first sets plan_cache_mode to force_custom_plan for its own implicit
// transaction (setCustomPlans), so that every call is still planned for
// its arguments, as an unnamed statement is (see pipeline): a generic plan
// would lock every partition of task and would keep the shape it had when
// the partition was small.
//
// Inside a caller's transaction, statements stay unnamed: were the server
// to have lost a prepared statement (DISCARD ALL, DEALLOCATE, a pooler that
// hands out another connection), the failure would abort the caller's
// transaction, whereas a round trip of taskpg's own rolls back and is sent
// again, once, after the connection's statements are prepared anew.

// setCustomPlans sets plan_cache_mode until the end of the round trip's
// implicit transaction.
const setCustomPlans = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// maxPrepared bounds the statements prepared on one connection; a
// connection that has as many sends the others unnamed. The statements of
// a repository number a few dozen, their variants included.
const maxPrepared = 256

// preparedKey is where a connection's prepared statements are kept, in
// pgconn's CustomData, which lives and dies with the connection.
const preparedKey = "github.com/taskrepo/taskrepo/taskpg.prepared"

// prepared is the statements prepared on one connection, by name.
type prepared map[string]struct{}

// preparedOf returns the prepared statements of conn.
func preparedOf(conn *pgconn.PgConn) prepared {
	p, ok := conn.CustomData()[preparedKey].(prepared)
	if !ok {
		p = prepared{}
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
// its name; "" when conn holds maxPrepared statements already.
func prepare(ctx context.Context, conn *pgconn.PgConn, sql string, oids []uint32) (string, error) {
	p, name := preparedOf(conn), statementName(sql, oids)
	if _, ok := p[name]; ok {
		return name, nil
	}
	if len(p) >= maxPrepared {
		return "", nil
	}
	if _, err := conn.Prepare(ctx, name, sql, oids); err != nil && !isCode(err, "42P05") { // duplicate_prepared_statement
		return "", err
	}
	p[name] = struct{}{}
	return name, nil
}

// lostStatement tells whether err says that the server no longer holds a
// statement as it was prepared: it was deallocated (invalid_sql_statement_name),
// or its result changed type after the table did (feature_not_supported,
// "cached plan must not change result type").
func lostStatement(err error) bool {
	return isCode(err, "26000") || isCode(err, "0A000")
}

// forgetPrepared deallocates the statements prepared on conn and forgets
// them, so that the next round trip prepares them anew.
func forgetPrepared(ctx context.Context, conn *pgconn.PgConn) {
	for name := range preparedOf(conn) {
		_ = conn.Deallocate(ctx, name) // a lost one is not there to deallocate
	}
	delete(conn.CustomData(), preparedKey)
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}
