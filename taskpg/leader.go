package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/lockkey"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Leader[DB] = (*Repository)(nil)

// Terms of leaders. Every decision is one statement that locks the topic's
// row of task_leader and reads its latest committed version (in an upsert or
// an UPDATE, under READ COMMITTED), on the database clock of that statement:
// decisions on a topic take turns, and each sees the one before. A term is
// current while expires > {now}; ending it sets expires to {now}, so that
// the next statement finds it over. Durations are microseconds.
//
// A transaction that holds a term (Hold) takes the topic's term lock
// (internal/lockkey) shared, until it ends; a Lead that takes a term over
// takes it exclusively before it writes, and so waits for every such
// transaction. The lock is an advisory lock, not the row's: PostgreSQL lets
// a new FOR SHARE lock of a row pass an UPDATE that waits for the row, so
// that transactions holding a term in overlapping turns would keep Renew
// from the row as long as they came, whereas it queues the requests of an
// advisory lock in their order. Renew and Concede of the owner's own term
// never take it: they end no term that another owner could begin.
const (
	// takeOverLock, sent before leadTerm in its round trip, takes the
	// topic's term lock exclusively when the term it reads is over: the
	// Lead waits there, holding no lock of the row yet, for the
	// transactions that hold the term. Its snapshot may be older than the
	// lock: leadTerm decides on the row's latest version.
	takeOverLock = `
SELECT pg_advisory_xact_lock($1, $2) FROM {schema}.task_leader WHERE topic = $3 AND expires <= {now}`
	// leadTerm inserts the topic's first term (number 1), takes over a term
	// that is over (the next number), or keeps the caller's own current
	// term as it is; it returns nothing when another owner's term is
	// current, or when the topic is not registered. The topic's row is
	// locked against a concurrent Destroy (FOR KEY SHARE). A take-over
	// needs the term lock ($4, $5), which takeOverLock took unless the term
	// ran out between the two statements; having locked the row, the
	// statement only tries it, for a wait there could close a circle with
	// another Lead that holds the term lock and waits for the row. When the
	// try fails, the statement returns nothing and the term it leaves is
	// over: Lead decides again (see leadAttempts).
	leadTerm = `
INSERT INTO {schema}.task_leader AS l (topic, owner, term, expires)
SELECT topic, $2, 1, {now} + $3 * interval '1 microsecond' FROM {schema}.task_topic WHERE topic = $1 FOR KEY SHARE
ON CONFLICT (topic) DO UPDATE
SET owner = EXCLUDED.owner,
    term = CASE WHEN l.expires <= {now} THEN l.term + 1 ELSE l.term END,
    expires = CASE WHEN l.expires <= {now} THEN EXCLUDED.expires ELSE l.expires END
WHERE CASE WHEN l.expires <= {now} THEN pg_try_advisory_xact_lock($4, $5) ELSE l.owner = EXCLUDED.owner END
RETURNING l.owner, l.term, l.expires, {now}`
	// leaderTerm reads the term of the leader that leadTerm found, after the
	// decision: it informs, it decides nothing.
	leaderTerm = `SELECT owner, term, expires, {now} FROM {schema}.task_leader WHERE topic = $1`
	// renewTerm moves the end of the owner's current term to ttl from now,
	// unless it is later already: a renewal never shortens a term, so that
	// what every earlier call of the owner returned stays true.
	renewTerm = `
UPDATE {schema}.task_leader SET expires = GREATEST(expires, {now} + $4 * interval '1 microsecond')
WHERE topic = $1 AND owner = $2 AND term = $3 AND expires > {now}
RETURNING owner, term, expires, {now}`
	// concedeTerm ends the owner's current term now.
	concedeTerm = `
UPDATE {schema}.task_leader SET expires = {now}
WHERE topic = $1 AND owner = $2 AND term = $3 AND expires > {now}`
	// holdLock takes the topic's term lock shared ($4, $5) when the term
	// is the owner's and current at the statement; a term that is over
	// takes no lock, which would only keep the next Lead waiting.
	holdLock = `
SELECT pg_advisory_xact_lock_shared($4, $5) FROM {schema}.task_leader
WHERE topic = $1 AND owner = $2 AND term = $3 AND expires > {now}`
	// holdTerm, after holdLock in the same round trip, finds the term
	// current or not: a statement of its own, so that its snapshot is
	// taken once the lock is held, and sees a take-over that the lock
	// waited for.
	holdTerm = `SELECT term FROM {schema}.task_leader WHERE topic = $1 AND owner = $2 AND term = $3 AND expires > {now}`
)

// tenure is what a decision on a term returns.
type tenure struct {
	term taskapi.Term
	ok   bool
}

// leadAttempts bounds how often Lead decides again when its decision found
// a term over but could not take it over: the term ran out after the
// statement that waits for the transactions holding it (see leadTerm).
const leadAttempts = 3

// errOverStill reports a decision that found the term over and could not
// take it over, so that its savepoint is rolled back (see lead).
var errOverStill = errors.New("the term is over but was not taken over")

// Lead makes this owner the leader of topic for ttl when no term is current,
// with the next number; returns its current term unchanged when it leads
// already; and reports false, with the current leader's term, when another
// owner leads. The decision goes in one round trip after the statement that
// takes the term lock for a take-over (see takeOverLock).
func (r *Repository) Lead(ctx context.Context, db DB, topic string, ttl time.Duration) (taskapi.Term, bool, error) {
	if err := check.Lease(topic, ttl); err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	t, err := retrying(ctx, db, func() (t tenure, err error) {
		for range leadAttempts {
			if t, err = r.lead(ctx, db, topic, ttl); !errors.Is(err, errOverStill) {
				return t, err
			}
		}
		// Each decision after the first waited for the term lock, which
		// holders of the term could no longer take: only a clock that went
		// back keeps the term over and not taken over. Report it as found.
		return t, nil
	})
	if err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	return t.term, t.ok, nil
}

// lead decides once: it returns this owner's term, or the term it found,
// with errOverStill when that is over. Where the round trip is not a
// transaction of its own, the decision runs in a savepoint, rolled back on
// errOverStill, so that the lock of the row that the decision took goes
// with it: the next decision waits for the term lock holding no lock of
// the row.
func (r *Repository) lead(ctx context.Context, db DB, topic string, ttl time.Duration) (t tenure, err error) {
	decide := func(db DB) error {
		key := r.termKey(topic)
		var row termRow
		err := pipeline(ctx, db,
			step{sql: r.fleetSQL(takeOverLock), args: []any{lockkey.TermSpace, key, topic}},
			row.step(r.fleetSQL(leadTerm), topic, r.owner, ttl.Microseconds(), lockkey.TermSpace, key))
		t = tenure{row.term(topic), row.found}
		if err != nil || row.found {
			return err
		}
		term, found, err := scanTerm(db.QueryRow(ctx, r.fleetSQL(leaderTerm), topic), topic)
		t.term = term
		switch {
		case err != nil:
			return err
		case !found:
			return unregistered(topic)
		case term.Left == 0:
			return errOverStill
		}
		return nil
	}
	if scopeOf(db) == own {
		return t, decide(db)
	}
	return t, atomic(ctx, db, decide)
}

// Renew extends term to ttl from now, unless it ends later already, if it is
// still current: this owner's, with the same number, and not over. It
// reports false, with the zero Term, otherwise.
func (r *Repository) Renew(ctx context.Context, db DB, term taskapi.Term, ttl time.Duration) (taskapi.Term, bool, error) {
	if run, err := check.Renew(r.owner, term, ttl); !run {
		return taskapi.Term{}, false, wrapf(err, "renew term %d of %q", term.Number, term.Topic)
	}
	t, err := retrying(ctx, db, func() (t tenure, err error) {
		err = sealed(ctx, db, func(db DB) (err error) {
			row := db.QueryRow(ctx, r.fleetSQL(renewTerm), term.Topic, r.owner, term.Number, ttl.Microseconds())
			t.term, t.ok, err = scanTerm(row, term.Topic)
			return err
		})
		return t, err
	})
	if err != nil {
		return taskapi.Term{}, false, wrapf(err, "renew term %d of %q", term.Number, term.Topic)
	}
	return t.term, t.ok, nil
}

// Concede ends term at once if it is still current, so that another owner
// may lead; otherwise it does nothing.
func (r *Repository) Concede(ctx context.Context, db DB, term taskapi.Term) error {
	if run, err := check.Concede(r.owner, term); !run {
		return wrapf(err, "concede term %d of %q", term.Number, term.Topic)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		_, err := exec(ctx, db, r.fleetSQL(concedeTerm), term.Topic, r.owner, term.Number)
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "concede term %d of %q", term.Number, term.Topic)
	}
	return nil
}

// Hold reports whether term is current, and inside a caller's transaction
// keeps it so until the transaction ends: the term lock and the read of the
// term in one round trip (see holdLock). On a pool, or a connection outside
// a transaction, it only reads.
func (r *Repository) Hold(ctx context.Context, db DB, term taskapi.Term) (bool, error) {
	if err := check.Hold(r.owner, term); err != nil {
		return false, wrapf(err, "hold term %d of %q", term.Number, term.Topic)
	}
	held, err := retrying(ctx, db, func() (current bool, err error) {
		var number int64
		args := []any{term.Topic, r.owner, term.Number}
		read := step{sql: r.fleetSQL(holdTerm), args: args, dest: []any{&number},
			each: func() error { current = true; return nil }}
		if scopeOf(db) == own {
			return current, pipeline(ctx, db, read)
		}
		lock := step{sql: r.fleetSQL(holdLock), args: append(args, lockkey.TermSpace, r.termKey(term.Topic))}
		return current, pipeline(ctx, db, lock, read)
	})
	if err != nil {
		return false, wrapf(err, "hold term %d of %q", term.Number, term.Topic)
	}
	return held, nil
}

// termKey is the key of the term lock of topic, shared with taskansi.
func (r *Repository) termKey(topic string) int32 {
	return lockkey.Term(r.plain, topic)
}

// termRow is a term's row (owner, number, end, and the moment of the
// statement) as a step of a pipeline scans it.
type termRow struct {
	owner   string
	number  int64
	expires time.Time
	at      time.Time
	found   bool
}

// step returns the step of sql with args, scanned into t.
func (t *termRow) step(sql string, args ...any) step {
	return step{sql: sql, args: args, dest: []any{&t.owner, &t.number, &t.expires, &t.at},
		each: func() error { t.found = true; return nil }}
}

// term returns the term of topic that t holds, the zero Term when none.
func (t *termRow) term(topic string) taskapi.Term {
	if !t.found {
		return taskapi.Term{}
	}
	expires := utc(t.expires)
	return taskapi.Term{Topic: topic, Owner: t.owner, Number: t.number, Expires: expires, Left: max(expires.Sub(utc(t.at)), 0)}
}

// scanTerm scans a term of topic (owner, number, expires, and the moment of
// the statement) and reports whether there was one.
func scanTerm(row pgx.Row, topic string) (taskapi.Term, bool, error) {
	var t termRow
	err := row.Scan(&t.owner, &t.number, &t.expires, &t.at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return taskapi.Term{}, false, nil
	case err != nil:
		return taskapi.Term{}, false, err
	}
	t.found = true
	return t.term(topic), true, nil
}
