package taskansi

import (
	"context"
	"database/sql"
	"errors"

	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

// currentTerm finds term current at the statement: this owner's, with the
// topic's current number, not over. Arguments: topic, owner, number, now.
const currentTerm = `SELECT term FROM {leader} WHERE topic = ? AND owner = ? AND term = ? AND expires > {now}`

// pollTerm finds the term under which a poll claims tasks, when it is this
// owner's and current at the statement, and keeps its row from changing
// until the poll's transaction ends ({keep}: FOR SHARE, LOCK IN SHARE
// MODE). A Lead that takes the topic over updates the row, so it waits for
// the poll to commit; a poll that waited for such a Lead reads the row's
// latest version (a locking read does, whatever the isolation level) and
// finds the term over. SQLite needs no lock: a poll takes the database's
// write lock first (see atomic) and holds it until its transaction ends,
// and Lead, a write, waits for it. Arguments: topic, owner, number, now.
const pollTerm = currentTerm + `{keep}`

// Hold. Inside a caller's transaction a term is kept current until the
// transaction ends as the dialect keeps what a transaction read (see
// dialect.locks): on PostgreSQL by the topic's term lock, the advisory lock
// of taskpg (internal/lockkey), which holdLock takes shared and a Lead that
// takes a term over, or Destroy, exclusively (see takeOverLock): PostgreSQL
// lets a new FOR SHARE lock of a row pass an UPDATE that waits for it, so
// that transactions holding a term in overlapping turns would keep Renew
// from the row as long as they came, whereas it queues the requests of an
// advisory lock in their order, and Renew and Concede never take it. On
// MySQL by a shared lock of the row, pollTerm's, which InnoDB queues behind
// a waiting writer of the row. On SQLite by the write lock, which Hold takes
// first, as every call does in a transaction (see atomic).
const (
	// holdLock takes the topic's term lock shared when the term is current
	// at the statement: a term that is over takes no lock, which would only
	// keep the next Lead waiting. currentTerm, a statement of its own, reads
	// the term again once the lock is held, in a snapshot that sees a
	// take-over that the lock waited for. Arguments: the lock's space and
	// key, then those of currentTerm.
	holdLock = `
SELECT pg_advisory_xact_lock_shared(CAST(? AS integer), CAST(? AS integer)) FROM {leader}
WHERE topic = ? AND owner = ? AND term = ? AND expires > {now}`
	// takeOverLock, run before leadTerm in its transaction, takes the
	// topic's term lock exclusively when the term it reads is over: the
	// Lead waits there, holding no lock of the row yet, for the
	// transactions that hold the term. Its snapshot may be older than the
	// lock: leadTerm decides on the row's latest version. Arguments: the
	// lock's space and key, the topic, now.
	takeOverLock = `
SELECT pg_advisory_xact_lock(CAST(? AS integer), CAST(? AS integer)) FROM {leader} WHERE topic = ? AND expires <= {now}`
)

// underTerm reports whether term is current at the statement, and if so
// keeps it so until tx ends (see pollTerm).
func (r *Repository) underTerm(ctx context.Context, tx DB, term taskapi.Term) (bool, error) {
	return r.isCurrent(ctx, tx, pollTerm, term)
}

// isCurrent runs query, currentTerm or pollTerm, on db and reports whether
// it found term current.
func (r *Repository) isCurrent(ctx context.Context, db DB, query string, term taskapi.Term) (bool, error) {
	var number int64
	row := db.QueryRowContext(ctx, r.fleetSQL(query), r.args(term.Topic, term.Owner, term.Number, now{})...)
	switch err := row.Scan(&number); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// hold reports whether term is current on db, and inside a caller's
// transaction keeps it so until the transaction ends (see holdLock).
func (r *Repository) hold(ctx context.Context, db DB, term taskapi.Term) (bool, error) {
	if !inside(db) {
		return r.isCurrent(ctx, db, currentTerm, term)
	}
	switch r.dialect.locks {
	case advisoryLocks:
		rows, err := db.QueryContext(ctx, r.fleetSQL(holdLock),
			r.args(int64(lockkey.TermSpace), int64(r.termKey(term.Topic)), term.Topic, term.Owner, term.Number, now{})...)
		if err == nil {
			err = drain(rows)
		}
		if err != nil {
			return false, err
		}
		return r.isCurrent(ctx, db, currentTerm, term)
	case lockRows:
		return r.isCurrent(ctx, db, pollTerm, term)
	}
	var held bool
	err := r.atomic(ctx, db, func(tx DB) (err error) {
		held, err = r.isCurrent(ctx, tx, currentTerm, term)
		return err
	})
	return held, err
}

// termKey is the key of the term lock of topic, taskpg's.
func (r *Repository) termKey(topic string) int32 {
	return lockkey.Term(r.plain, topic)
}
