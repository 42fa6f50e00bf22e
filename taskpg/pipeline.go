package taskpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A step is one statement of a pipeline. Rows, when the statement returns
// any, are scanned into dest and handed to each in turn.
type step struct {
	sql  string
	args []any
	dest []any
	each func() error
	tag  *pgconn.CommandTag // receives the statement's command tag when set
	// generic says that the statement names no partitioned table: its
	// server may keep a generic plan of it (see partition.go).
	generic bool
}

// pipeline sends steps in one round trip, as statements that PostgreSQL
// plans for their arguments every time (prepared ones in a round trip of
// its own, see prepare.go), unless every step is generic (partition.go): a
// generic plan would lock every partition of task, and fits the tables as
// they were when it was made. Where db is a
// pool or a connection outside a transaction, the steps share the implicit
// transaction of their round trip, guarded against ctx's end (see guard);
// inside a caller's transaction they are part of it. A step that fails
// skips the steps after it. Any other implementation of DB runs the steps
// one by one in a transaction of its own.
func pipeline(ctx context.Context, db DB, steps ...step) error {
	conn, release, err := connOf(ctx, db)
	if err != nil {
		return err
	}
	if conn == nil {
		return atomic(ctx, db, func(tx DB) error { return stepByStep(ctx, tx, steps) })
	}
	defer release()
	if scopeOf(db) == own {
		return guard(ctx, conn, func(ctx context.Context) error { return sendPrepared(ctx, conn, steps) })
	}
	return sendSteps(ctx, conn, steps, false)
}

// sendPrepared sends steps prepared (see prepare.go) in a round trip of
// its own, and once more, unnamed, when the connection had lost one of its
// statements: the round trip's implicit transaction rolled back.
func sendPrepared(ctx context.Context, conn *pgx.Conn, steps []step) error {
	err := sendSteps(ctx, conn, steps, true)
	if lostStatement(err) {
		stopPreparing(ctx, conn.PgConn())
		err = sendSteps(ctx, conn, steps, true)
	}
	return err
}

// cancelPatience is how long a call that its context gave up on waits for
// the server to stop its statement before it cuts the connection, unless
// the context is taskapi.Bounded to less (see patienceOf). A cut leaves
// the statement running, to commit once its locks are free, so the
// patience is generous: through a PgBouncer on a loaded machine a cancel
// request took more than 2 s to stop a statement, and once, in CI, none
// stopped it within 5 s (before cancelAgain).
const cancelPatience = 5 * time.Second

// patienceOf returns how long a call on ctx waits for the server to stop
// its statement once ctx ended: cancelPatience, or half the bound of ctx
// when that is shorter, so that a runtime that bounds its statements is
// not held by a connection that went silent much longer than it allows (a
// server that answers stops a statement in a round trip).
func patienceOf(ctx context.Context) time.Duration {
	if d, ok := taskapi.BoundOf(ctx); ok {
		return min(d/2, cancelPatience)
	}
	return cancelPatience
}

// guard runs call, one round trip on conn, a connection outside any
// transaction: its statements share the round trip's implicit
// transaction, which the server commits when it reads the round trip's
// end. Were pgx left to watch ctx, it would cut the connection once ctx
// ends, and a statement that waits for a lock would still run, and commit,
// once the lock is free, though the call reported an error. So guard
// watches ctx itself, and call gets a context that pgx does not watch:
// when ctx ends, a cancel request asks the server to stop the statement,
// which rolls the implicit transaction back, and the call reports ctx's
// error; a round trip that ended without an error committed, and the call
// says so. The connection is closed afterwards, so that a late cancel
// request never stops another statement. A server that does not stop the
// statement within its patience (patienceOf) is cut off, and then, as
// with any connection that breaks, the outcome is unknown: the error says
// so and wraps taskapi.ErrUnavailable besides ctx's error.
func guard(ctx context.Context, conn *pgx.Conn, call func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ended, gaveUp := make(chan struct{}), make(chan struct{})
	patience := patienceOf(ctx)
	var stopped bool
	stop := context.AfterFunc(ctx, func() {
		defer close(gaveUp)
		stopped = stopStatement(conn, ended, patience)
	})
	err := call(context.WithoutCancel(ctx))
	close(ended)
	if stop() { // ctx did not end meanwhile
		return err
	}
	<-gaveUp
	dropSilent(conn)
	closeCtx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_ = conn.Close(closeCtx)
	switch {
	case !stopped:
		return fmt.Errorf("%w: the server did not stop the statement within %v and it may still commit: read back before doing it again (%w: %w)",
			context.Cause(ctx), patience, taskapi.ErrUnavailable, err)
	case err != nil:
		return fmt.Errorf("%w (the server stopped the statement: %w)", context.Cause(ctx), err)
	}
	return nil
}

// cancelAgain is how often stopStatement repeats its cancel request while
// the statement runs on: a request may be lost on its way (a pooler that
// could not pass it on answers as one that did), and one that comes after
// the statement ended finds the connection idle, which it leaves alone.
const cancelAgain = 500 * time.Millisecond

// stopStatement asks the server of conn to stop the statement it runs,
// every cancelAgain, and reports whether the round trip ended within
// patience; if not, it cuts the connection.
func stopStatement(conn *pgx.Conn, ended <-chan struct{}, patience time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	again := time.NewTicker(cancelAgain)
	defer again.Stop()
	for {
		_ = conn.PgConn().CancelRequest(ctx)
		select {
		case <-ended:
			return true
		case <-again.C:
		case <-ctx.Done():
			select {
			case <-ended:
				return true
			default:
			}
			_ = conn.PgConn().Conn().SetDeadline(time.Now())
			return false
		}
	}
}

// sendSteps sends steps on conn in one round trip and scans their results:
// as unnamed statements, or prepared after a statement that asks for
// custom plans until the round trip ends, or for plans on indexes when
// every step is generic (see partition.go).
func sendSteps(ctx context.Context, conn *pgx.Conn, steps []step, prepared bool) error {
	m := conn.TypeMap()
	b := &pgconn.Batch{}
	if prepared {
		name, err := prepare(ctx, conn.PgConn(), plansFor(steps), nil)
		if err != nil {
			return err
		}
		if prepared = name != ""; prepared {
			b.ExecPrepared(name, nil, nil, nil)
		}
	}
	for _, s := range steps {
		values, oids, err := encode(m, s.args)
		if err != nil {
			return err
		}
		name := ""
		if prepared {
			if name, err = prepare(ctx, conn.PgConn(), s.sql, oids); err != nil {
				return err
			}
		}
		if name == "" {
			b.ExecParams(s.sql, values, oids, binary, binary)
		} else {
			b.ExecPrepared(name, values, binary, binary)
		}
	}
	results, err := conn.PgConn().ExecBatch(ctx, b).ReadAll()
	if err != nil {
		return err
	}
	if prepared {
		results = results[1:] // plansFor(steps)
	}
	for i, r := range results {
		if err := scanResult(m, r, steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// plansFor returns the statement that sets how the server plans steps:
// setGenericPlans when every one is generic, setCustomPlans otherwise.
func plansFor(steps []step) string {
	for _, s := range steps {
		if !s.generic {
			return setCustomPlans
		}
	}
	return setGenericPlans
}

// binary asks for every parameter and column in binary format.
var binary = []int16{pgtype.BinaryFormatCode}

// encode encodes args in binary format, each with the type that pgx gives
// its Go type (a nil is a NULL of the type the statement says).
func encode(m *pgtype.Map, args []any) ([][]byte, []uint32, error) {
	values, oids := make([][]byte, len(args)), make([]uint32, len(args))
	for i, arg := range args {
		if arg == nil {
			continue
		}
		typ, ok := m.TypeForValue(arg)
		if !ok {
			return nil, nil, fmt.Errorf("no PostgreSQL type for argument %d (%T)", i+1, arg)
		}
		v, err := m.Encode(typ.OID, pgtype.BinaryFormatCode, arg, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("encode argument %d: %w", i+1, err)
		}
		values[i], oids[i] = v, typ.OID
	}
	return values, oids, nil
}

func scanResult(m *pgtype.Map, r *pgconn.Result, s step) error {
	if s.tag != nil {
		*s.tag = r.CommandTag
	}
	if s.each == nil {
		return nil
	}
	for _, row := range r.Rows {
		for i, value := range row {
			fd := r.FieldDescriptions[i]
			if err := m.Scan(fd.DataTypeOID, fd.Format, value, s.dest[i]); err != nil {
				return fmt.Errorf("scan column %s: %w", fd.Name, err)
			}
		}
		if err := s.each(); err != nil {
			return err
		}
	}
	return nil
}

// stepByStep runs steps one after the other on db, planned per call.
func stepByStep(ctx context.Context, db DB, steps []step) error {
	for _, s := range steps {
		rows, err := db.Query(ctx, s.sql, append([]any{pgx.QueryExecModeExec}, s.args...)...)
		if err != nil {
			return err
		}
		if s.each == nil {
			rows.Close()
		} else {
			_, err = pgx.ForEachRow(rows, s.dest, s.each)
		}
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return err
		}
		if s.tag != nil {
			*s.tag = rows.CommandTag()
		}
	}
	return nil
}

// connOf returns the connection of pgx under db, idle between statements,
// and a function that hands it back; nil for another implementation of DB.
func connOf(ctx context.Context, db DB) (*pgx.Conn, func(), error) {
	switch db := db.(type) {
	case *pgxpool.Pool:
		c, err := db.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		return c.Conn(), c.Release, nil
	case *pgx.Conn:
		return db, func() {}, nil
	case interface{ Conn() *pgx.Conn }: // pgx.Tx, *pgxpool.Conn
		return db.Conn(), func() {}, nil
	}
	return nil, nil, nil
}

// timestamp makes t, in UTC, a parameter of type timestamp: pgx would send a
// time.Time as timestamptz, which PostgreSQL converts to a timestamp in the
// session's time zone.
func timestamp(t time.Time) pgtype.Timestamp {
	return pgtype.Timestamp{Time: t.UTC(), Valid: true}
}

// exec and query run a statement planned per call (see pipeline); where db
// is a pool or a connection outside a transaction, exec runs its statement
// as a pipeline does, guarded against ctx's end.
func exec(ctx context.Context, db DB, sql string, args ...any) (pgconn.CommandTag, error) {
	if scopeOf(db) == own {
		var tag pgconn.CommandTag
		err := pipeline(ctx, db, step{sql: sql, args: args, tag: &tag})
		return tag, err
	}
	return db.Exec(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func query(ctx context.Context, db DB, sql string, args ...any) (pgx.Rows, error) {
	return db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}
