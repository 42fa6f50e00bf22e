package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskpg"
)

// endPatience bounds the COMMIT or ROLLBACK that ends a transaction once
// its call's context is done.
const endPatience = 10 * time.Second

// queryCanceled is PostgreSQL's code of a statement stopped by its
// statement_timeout.
const queryCanceled = "57014"

// transactPG returns the transaction function of taskctl's store on
// PostgreSQL: fn runs in a transaction begun on pool, which commits when fn
// returns nil and rolls back otherwise, also when fn panics. Two things
// set it apart from taskpg.Transact (pgx.BeginFunc):
//
//   - A context with a deadline gives the transaction a statement_timeout
//     of most of the time left (see limitStatements), so that the server
//     itself stops a statement that the caller is about to give up on, and
//     says so before the call returns. Once the context is done, pgx
//     closes the connection instead, and cancels the statement with a
//     request on the side that may land after the call returned. The
//     dashboard's counts within a time budget rely on this (see
//     internal/web's budget.go); a statement stopped so fails with an
//     error that wraps context.DeadlineExceeded.
//   - The transaction ends even once ctx is done (within endPatience):
//     pgx would not send the ROLLBACK with a done context but close the
//     connection.
//
// With readOnly (--read-database), every transaction begins READ ONLY.
//
// A connection closed costs the next call a new one, and the server's
// first planning of the partitioned task table on it (40 ms at a thousand
// topics).
func transactPG(pool *pgxpool.Pool, readOnly bool) func(ctx context.Context, fn func(tx taskpg.DB) error) error {
	opts := pgx.TxOptions{}
	if readOnly {
		opts.AccessMode = pgx.ReadOnly
	}
	return func(ctx context.Context, fn func(tx taskpg.DB) error) error {
		tx, err := pool.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		end, cancel := context.WithTimeout(context.WithoutCancel(ctx), endPatience)
		defer cancel()
		defer tx.Rollback(end) // after the commit it sends nothing
		if err := limitStatements(ctx, tx); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return deadlineError(ctx, err)
		}
		return tx.Commit(end)
	}
}

// limitStatements sets the statement_timeout of tx to four fifths of the
// time left before the deadline of ctx, if it has one: the server stops
// the statement, and its error comes back, before the deadline closes the
// connection.
func limitStatements(ctx context.Context, tx pgx.Tx) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	ms := max(time.Until(deadline).Milliseconds()*4/5, 1)
	_, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", ms), pgx.QueryExecModeSimpleProtocol)
	return err
}

// deadlineError marks err with context.DeadlineExceeded when it is the
// error of a statement that the statement_timeout set from the deadline of
// ctx stopped.
func deadlineError(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if _, ok := ctx.Deadline(); ok && errors.As(err, &pgErr) && pgErr.Code == queryCanceled {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}
