package taskansi

import (
	"context"
	"database/sql"
	"errors"

	"github.com/taskrepo/taskrepo/taskapi"
)

// pollTerm finds the term under which a poll claims tasks, when it is this
// owner's and current at the statement, and keeps its row from changing
// until the poll's transaction ends ({keep}: FOR SHARE, LOCK IN SHARE
// MODE). A Lead that takes the topic over updates the row, so it waits for
// the poll to commit; a poll that waited for such a Lead reads the row's
// latest version (a locking read does, whatever the isolation level) and
// finds the term over. SQLite needs no lock: a poll takes the database's
// write lock first (see atomic) and holds it until its transaction ends,
// and Lead, a write, waits for it. Arguments: topic, owner, number, now.
const pollTerm = `SELECT term FROM {leader} WHERE topic = ? AND owner = ? AND term = ? AND expires > {now}{keep}`

// underTerm reports whether term is current at the statement, and if so
// keeps it so until tx ends (see pollTerm).
func (r *Repository) underTerm(ctx context.Context, tx DB, term taskapi.Term) (bool, error) {
	var number int64
	row := tx.QueryRowContext(ctx, r.fleetSQL(pollTerm), r.args(term.Topic, term.Owner, term.Number, now{})...)
	switch err := row.Scan(&number); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
