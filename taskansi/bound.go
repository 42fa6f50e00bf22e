package taskansi

import (
	"context"
	"time"

	"github.com/taskrepo/taskrepo/internal/bound"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Bounder[DB] = (*Repository)(nil)

// Bound bounds the rest of db's transaction on a PostgreSQL server: no
// statement runs longer than d, and the transaction does not sit idle
// between statements longer than d (statement_timeout and
// idle_in_transaction_session_timeout, set locally: they end with the
// transaction). MySQL and SQLite cannot bound one transaction, and a pool
// or a connection outside a transaction needs no bound: Bound does nothing
// there. d below a millisecond is ErrInvalidArgument.
func (r *Repository) Bound(ctx context.Context, db DB, d time.Duration) error {
	if err := bound.Refused(ctx, d); err != nil {
		return wrapf(err, "bound a transaction")
	}
	if r.dialect.name != "postgres" || !inside(db) {
		return nil
	}
	_, err := db.ExecContext(ctx, bound.Postgres(d))
	return wrapf(err, "bound a transaction to %v", d)
}
