package taskpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A step is one statement of a pipeline. Rows, when the statement returns
// any, are scanned into dest and handed to each in turn.
type step struct {
	sql  string
	args []any
	dest []any
	each func() error
	tag  *pgconn.CommandTag // receives the statement's command tag when set
}

// pipeline sends steps in one round trip, as unnamed statements that
// PostgreSQL plans for their arguments every time: a prepared statement's
// generic plan would lock every partition of task, and fits the tables as
// they were when it was made. Where db is a pool or a connection outside a
// transaction, the steps share one implicit transaction; inside a caller's
// transaction they are part of it. A step that fails skips the steps after
// it. Any other implementation of DB runs the steps one by one in a
// transaction of its own.
func pipeline(ctx context.Context, db DB, steps ...step) error {
	conn, release, err := connOf(ctx, db)
	if err != nil {
		return err
	}
	if conn == nil {
		return atomic(ctx, db, func(tx DB) error { return stepByStep(ctx, tx, steps) })
	}
	defer release()
	m := conn.TypeMap()
	b := &pgconn.Batch{}
	for _, s := range steps {
		values, oids, err := encode(m, s.args)
		if err != nil {
			return err
		}
		b.ExecParams(s.sql, values, oids, binary, binary)
	}
	results, err := conn.PgConn().ExecBatch(ctx, b).ReadAll()
	if err != nil {
		return err
	}
	for i, r := range results {
		if err := scanResult(m, r, steps[i]); err != nil {
			return err
		}
	}
	return nil
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

// exec and query run a statement planned per call (see pipeline).
func exec(ctx context.Context, db DB, sql string, args ...any) (pgconn.CommandTag, error) {
	return db.Exec(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func query(ctx context.Context, db DB, sql string, args ...any) (pgx.Rows, error) {
	return db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}
