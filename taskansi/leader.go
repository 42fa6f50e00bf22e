package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Leader[DB] = (*Repository)(nil)

// Terms of leaders. Every decision is one statement that locks the topic's
// row of task_leader and reads its latest committed version (an upsert or
// an UPDATE), on the clock of that statement: decisions on a topic take
// turns, and each sees the one before. On SQLite, one writer at a time,
// the statement runs after the write lock is taken, with the time of the
// process taken then. A term is current while expires > {now}; ending it
// sets expires to {now}, so that the next statement finds it over. A Lead
// that takes a term over waits for the transactions that hold it (Hold):
// on PostgreSQL for the topic's term lock first (see takeOverLock in
// term.go), elsewhere for the row's lock or the write lock, as it does for
// the polls under the term.
//
// leadTerm inserts the topic's first term (number 1), takes over a term that
// is over (the next number), or keeps the caller's own current term as it
// is. Where the dialect returns rows, it returns nothing when another
// owner's term is current or the topic is not registered. On MySQL, which
// has neither RETURNING nor a condition on ON DUPLICATE KEY UPDATE, each
// column keeps its value unless the term is over (expires, which the IFs
// read, is assigned last: MySQL assigns from left to right), and leaderTerm
// then reads the row that the statement locked, in the same transaction.
// Arguments: the owner, later(ttl), the topic, then now for every {now}.
var leadTerm = map[string]string{
	// A take-over needs the topic's term lock, which takeOverLock took
	// unless the term ran out between the two statements: having locked
	// the row, the statement only tries it (see errOverStill), for a wait
	// there could close a circle with another Lead that holds the term
	// lock and waits for the row. Two more arguments: the lock's space and
	// key.
	"postgres": `
INSERT INTO {leader} AS l (topic, owner, term, expires)
SELECT topic, ?, 1, {later} FROM {topic} WHERE topic = ? FOR KEY SHARE
ON CONFLICT (topic) DO UPDATE
SET owner = excluded.owner,
    term = CASE WHEN l.expires <= {now} THEN l.term + 1 ELSE l.term END,
    expires = CASE WHEN l.expires <= {now} THEN excluded.expires ELSE l.expires END
WHERE CASE WHEN l.expires <= {now} THEN pg_try_advisory_xact_lock(CAST(? AS integer), CAST(? AS integer))
           ELSE l.owner = excluded.owner END
RETURNING owner, term, expires, {now}`,
	"sqlite": `
INSERT INTO {leader} AS l (topic, owner, term, expires)
SELECT topic, ?, 1, {later} FROM {topic} WHERE topic = ?
ON CONFLICT (topic) DO UPDATE
SET owner = excluded.owner,
    term = CASE WHEN l.expires <= {now} THEN l.term + 1 ELSE l.term END,
    expires = CASE WHEN l.expires <= {now} THEN excluded.expires ELSE l.expires END
WHERE l.expires <= {now} OR l.owner = excluded.owner
RETURNING owner, term, expires, {now}`,
	"mysql": `
INSERT INTO {leader} (topic, owner, term, expires)
SELECT topic, ?, 1, {later} FROM {topic} WHERE topic = ?
ON DUPLICATE KEY UPDATE
    term = IF(expires <= {now}, term + 1, term),
    owner = IF(expires <= {now}, VALUES(owner), owner),
    expires = IF(expires <= {now}, VALUES(expires), expires)`,
}

// The other statements on terms, the same for every dialect but for
// RETURNING, which MySQL lacks: there leaderTerm reads the row afterwards
// in the same transaction (see readTerm).
const (
	// leaderTerm reads the topic's term after a decision: it informs, it
	// decides nothing.
	leaderTerm = `SELECT owner, term, expires, {now} FROM {leader} WHERE topic = ?`
	// renewTerm moves the end of the owner's current term to ttl from now,
	// unless it is later already: a renewal never shortens a term, so that
	// what every earlier call of the owner returned stays true. Arguments:
	// later(ttl), topic, owner, number, now (and now for RETURNING).
	renewTerm = `
UPDATE {leader} SET expires = {greatest}(expires, {later})
WHERE topic = ? AND owner = ? AND term = ? AND expires > {now}`
	termColumns = ` RETURNING owner, term, expires, {now}`
	// concedeTerm ends the owner's current term now. Arguments: now,
	// topic, owner, number, now.
	concedeTerm = `
UPDATE {leader} SET expires = {now}
WHERE topic = ? AND owner = ? AND term = ? AND expires > {now}`
)

// later stands for the moment of the statement plus a duration.
type later time.Duration

// leaseArgs returns args with now and later replaced for the dialect, as
// args does, all of them from one reading of the process's clock: dropped,
// or microseconds, where the database reads its own clock.
func (r *Repository) leaseArgs(args ...any) []any {
	at := time.Now()
	processClock := r.dialect.now == "?"
	out := args[:0:0]
	for _, arg := range args {
		switch a := arg.(type) {
		case now:
			if processClock {
				out = append(out, timeParameter(at))
			}
		case later:
			if processClock {
				out = append(out, timeParameter(at.Add(time.Duration(a))))
			} else {
				out = append(out, time.Duration(a).Microseconds())
			}
		default:
			out = append(out, arg)
		}
	}
	return out
}

// leaseUnit runs fn, a decision on a term, as a unit where it needs one: on
// SQLite after the write lock, so that the process's clock is read while
// the statement's transaction holds it; on MySQL in a transaction, so that
// the row the decision locked stays locked until it is read back. On
// PostgreSQL the decision is one statement, sealed (see sealed).
func (r *Repository) leaseUnit(ctx context.Context, db DB, fn func(tx DB) error) error {
	if r.dialect.name == "postgres" {
		return r.sealed(ctx, db, fn)
	}
	return r.atomic(ctx, db, fn)
}

// leadAttempts bounds how often Lead on MySQL decides again when this
// owner's term ran out between the decision and the read of its row, and
// on PostgreSQL when the decision found a term over but could not take it
// over (see errOverStill).
const leadAttempts = 3

// errOverStill reports a decision on PostgreSQL that found the term over
// and could not take it over: the term ran out after takeOverLock, which
// so took no lock, and transactions hold it (see leadTerm). The decision's
// transaction or savepoint is rolled back, with the lock of the row it
// took, and Lead decides again, waiting for the term lock first.
var errOverStill = errors.New("the term is over but was not taken over")

// Lead makes this owner the leader of topic for ttl when no term is current,
// with the next number; returns its current term unchanged when it leads
// already; and reports false, with the current leader's term, when another
// owner leads.
func (r *Repository) Lead(ctx context.Context, db DB, topic string, ttl time.Duration) (taskapi.Term, bool, error) {
	if err := check.Lease(topic, ttl); err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	var (
		term taskapi.Term
		ok   bool
	)
	unit := r.leaseUnit
	if r.dialect.locks == advisoryLocks {
		unit = r.atomic // a savepoint in a caller's transaction, for errOverStill
	}
	err := r.retrying(ctx, db, func(db DB) error {
		for range leadAttempts {
			err := unit(ctx, db, func(tx DB) (err error) {
				term, ok, err = r.lead(ctx, tx, topic, ttl)
				return err
			})
			if !errors.Is(err, errOverStill) {
				return err
			}
		}
		// Each decision after the first waited for the term lock, which
		// holders of the term could no longer take: only a clock that went
		// back keeps the term over and not taken over. Report it as found.
		return nil
	})
	if err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	return term, ok, nil
}

// lead decides on the leadership of topic in tx. Where the dialect returns
// rows, one statement decides and returns the term it leaves, unless
// another owner's term is current, which a second statement reads; on
// PostgreSQL after takeOverLock, and with errOverStill when the term read
// is over. On MySQL the decision is followed by the read of the row it
// locked; should this owner's term have run out in between (a ttl shorter
// than the pause between the statements), it decides again, a few times at
// most.
func (r *Repository) lead(ctx context.Context, tx DB, topic string, ttl time.Duration) (taskapi.Term, bool, error) {
	query := r.fleetSQL(leadTerm[r.dialect.name])
	args := []any{r.owner, later(ttl), topic, now{}, now{}, now{}, now{}} // {now} four times on SQLite
	if r.dialect.locks == advisoryLocks {
		space, key := int64(lockkey.TermSpace), int64(r.termKey(topic))
		rows, err := tx.QueryContext(ctx, r.fleetSQL(takeOverLock), r.args(space, key, topic, now{})...)
		if err == nil {
			err = drain(rows)
		}
		if err != nil {
			return taskapi.Term{}, false, err
		}
		args = append(args, space, key)
	}
	if r.dialect.returning {
		term, found, err := scanTerm(tx.QueryRowContext(ctx, query, r.leaseArgs(args...)...), topic)
		if err != nil || found {
			return term, found, foreignTopic(err)
		}
		if term, err = r.mustReadTerm(ctx, tx, topic); err == nil && term.Left == 0 && r.dialect.locks == advisoryLocks {
			err = errOverStill
		}
		return term, false, err
	}
	var term taskapi.Term
	for range leadAttempts {
		if _, err := tx.ExecContext(ctx, query, r.leaseArgs(args[:3]...)...); err != nil {
			return taskapi.Term{}, false, foreignTopic(err)
		}
		var err error
		if term, err = r.mustReadTerm(ctx, tx, topic); err != nil || term.Owner != r.owner || term.Left > 0 {
			return term, err == nil && term.Owner == r.owner, err
		}
	}
	return term, false, nil // this owner's term, over already
}

// readTerm reads the term of topic after a decision and reports whether
// there is one. Where the dialect does not return the rows it writes, it
// locks the row, so that it reads the latest version whatever the
// isolation level (the decision locked it already).
func (r *Repository) readTerm(ctx context.Context, tx DB, topic string) (taskapi.Term, bool, error) {
	query := leaderTerm
	if !r.dialect.returning {
		query += "{wait}"
	}
	return scanTerm(tx.QueryRowContext(ctx, r.fleetSQL(query), r.leaseArgs(now{}, topic)...), topic)
}

// mustReadTerm reads the term of topic after Lead's decision; ErrUnknownTopic
// when there is none, since a decision on a registered topic leaves one.
func (r *Repository) mustReadTerm(ctx context.Context, tx DB, topic string) (taskapi.Term, error) {
	term, found, err := r.readTerm(ctx, tx, topic)
	if err == nil && !found {
		err = fmt.Errorf("topic %q is not registered: %w", check.Short(topic), taskapi.ErrUnknownTopic)
	}
	return term, err
}

// Renew extends term to ttl from now, unless it ends later already, if it is
// still current: this owner's, with the same number, and not over. It
// reports false, with the zero Term, otherwise.
func (r *Repository) Renew(ctx context.Context, db DB, term taskapi.Term, ttl time.Duration) (taskapi.Term, bool, error) {
	if run, err := check.Renew(r.owner, term, ttl); !run {
		return taskapi.Term{}, false, wrapf(err, "renew term %d of %q", term.Number, term.Topic)
	}
	var (
		renewed taskapi.Term
		ok      bool
	)
	err := r.retrying(ctx, db, func(db DB) error {
		return r.leaseUnit(ctx, db, func(tx DB) (err error) {
			renewed, ok, err = r.renew(ctx, tx, term, ttl)
			return err
		})
	})
	if err != nil {
		return taskapi.Term{}, false, wrapf(err, "renew term %d of %q", term.Number, term.Topic)
	}
	if !ok {
		return taskapi.Term{}, false, nil
	}
	return renewed, true, nil
}

// renew moves the end of term. On MySQL it reads the row back: the term was
// renewed when the row is still this term and current. An UPDATE that found
// the term current changed the row, or left it as it was (MySQL counts no
// row then); one that found it over left it over, as the read sees.
func (r *Repository) renew(ctx context.Context, tx DB, term taskapi.Term, ttl time.Duration) (taskapi.Term, bool, error) {
	args := []any{later(ttl), term.Topic, r.owner, term.Number, now{}}
	if r.dialect.returning {
		row := tx.QueryRowContext(ctx, r.fleetSQL(renewTerm+termColumns), r.leaseArgs(append(args, now{})...)...)
		return scanTerm(row, term.Topic)
	}
	if _, err := tx.ExecContext(ctx, r.fleetSQL(renewTerm), r.leaseArgs(args...)...); err != nil {
		return taskapi.Term{}, false, err
	}
	current, found, err := r.readTerm(ctx, tx, term.Topic)
	ok := found && current.Owner == r.owner && current.Number == term.Number && current.Left > 0
	return current, ok, err
}

// Concede ends term at once if it is still current, so that another owner
// may lead; otherwise it does nothing.
func (r *Repository) Concede(ctx context.Context, db DB, term taskapi.Term) error {
	if run, err := check.Concede(r.owner, term); !run {
		return wrapf(err, "concede term %d of %q", term.Number, term.Topic)
	}
	err := r.retrying(ctx, db, func(db DB) error {
		return r.leaseUnit(ctx, db, func(tx DB) error {
			args := r.leaseArgs(now{}, term.Topic, r.owner, term.Number, now{})
			_, err := tx.ExecContext(ctx, r.fleetSQL(concedeTerm), args...)
			return err
		})
	})
	if err != nil {
		return wrapf(err, "concede term %d of %q", term.Number, term.Topic)
	}
	return nil
}

// Hold reports whether term is current, and inside a caller's transaction
// keeps it so until the transaction ends, as the dialect does (see
// holdLock). On a *sql.DB, or a *sql.Conn outside a transaction, it only
// reads.
func (r *Repository) Hold(ctx context.Context, db DB, term taskapi.Term) (bool, error) {
	if err := check.Hold(r.owner, term); err != nil {
		return false, wrapf(err, "hold term %d of %q", term.Number, term.Topic)
	}
	var held bool
	err := r.retrying(ctx, db, func(db DB) (err error) {
		held, err = r.hold(ctx, db, term)
		return err
	})
	if err != nil {
		return false, wrapf(err, "hold term %d of %q", term.Number, term.Topic)
	}
	return held, nil
}

// scanTerm scans a term of topic (owner, number, end, and the moment of the
// statement) and reports whether there was one.
func scanTerm(row *sql.Row, topic string) (taskapi.Term, bool, error) {
	term := taskapi.Term{Topic: topic}
	var at time.Time
	err := row.Scan(&term.Owner, &term.Number, utcTime{&term.Expires}, utcTime{&at})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return taskapi.Term{}, false, nil
	case err != nil:
		return taskapi.Term{}, false, err
	}
	term.Left = max(term.Expires.Sub(at), 0)
	return term, true, nil
}

// foreignTopic reports as ErrUnknownTopic the failure of a row's foreign key
// to task_topic: a topic destroyed between the statement's read of it and
// its write (PostgreSQL 23503, MySQL 1452).
func foreignTopic(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "23503" || mysqlNumber(err) == mysqlNoParent {
		return fmt.Errorf("%w: %w", taskapi.ErrUnknownTopic, err)
	}
	return err
}

// mysqlNoParent is ER_NO_REFERENCED_ROW_2: a foreign key's parent row is
// missing.
const mysqlNoParent = 1452
