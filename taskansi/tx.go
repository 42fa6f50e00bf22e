package taskansi

import (
	"context"
	"database/sql"
	"strings"
)

// beginner is a handle that starts transactions: *sql.DB and *sql.Conn.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// savepoint names the savepoint of a call inside a caller's transaction.
const savepoint = "taskrepo_call"

// atomic runs fn inside a transaction of its own: a real one on a *sql.DB or
// a *sql.Conn, a savepoint inside a caller's *sql.Tx (database/sql has no
// nested transactions). It takes the dialect's write lock first. When fn
// fails, it rolls back, even once ctx is done, so that a caller's transaction
// stays usable; it never commits or rolls back the caller's transaction.
func (r *Repository) atomic(ctx context.Context, db DB, fn func(tx DB) error) error {
	b, ok := db.(beginner)
	if !ok {
		return r.inSavepoint(ctx, db, fn)
	}
	tx, err := b.BeginTx(ctx, &sql.TxOptions{Isolation: r.dialect.isolation})
	if err != nil {
		return err
	}
	if err = r.lockWrites(ctx, tx); err == nil {
		err = fn(tx)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		_ = tx.Rollback() // the error of fn or Commit is the one to report
	}
	return err
}

func (r *Repository) inSavepoint(ctx context.Context, db DB, fn func(tx DB) error) error {
	if _, err := db.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
		return err
	}
	err := r.lockWrites(ctx, db)
	if err == nil {
		err = fn(db)
	}
	if err != nil {
		undo := context.WithoutCancel(ctx)
		_, _ = db.ExecContext(undo, "ROLLBACK TO SAVEPOINT "+savepoint) // err is the one to report
	}
	if _, releaseErr := db.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+savepoint); err == nil {
		err = releaseErr
	}
	return err
}

// lockWrites takes the dialect's write lock, where it has one.
func (r *Repository) lockWrites(ctx context.Context, db DB) error {
	if r.q.writeLock == "" {
		return nil
	}
	_, err := db.ExecContext(ctx, r.q.writeLock)
	return err
}

// expand fills the per-call tokens of query (pairs of token and text, see
// marks and rangeMarks) and numbers its placeholders for the dialect.
func (r *Repository) expand(query string, pairs ...string) string {
	if len(pairs) > 0 {
		query = strings.NewReplacer(pairs...).Replace(query)
	}
	return r.dialect.bind(query)
}

// marks returns n placeholders separated by commas.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// rangeMarks returns the condition that a sequence lies in one of n ranges.
func rangeMarks(n int) string {
	return strings.TrimSuffix(strings.Repeat("sequence BETWEEN ? AND ? OR ", n), " OR ")
}

// chunk is the most list items, ranges or rows that one statement takes, far
// below the parameter limits of the databases (SQLite's is 32766), and
// statementBytes the most bytes of text that one INSERT takes, unless one row
// has more: well within MySQL's smallest default max_allowed_packet (16 MiB
// on MariaDB).
const (
	chunk          = 1000
	statementBytes = 4 << 20
)

// appendArgs appends items to args.
func appendArgs[T any](args []any, items ...T) []any {
	for _, item := range items {
		args = append(args, item)
	}
	return args
}
