package taskpg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Leader[DB] = (*Repository)(nil)

// Terms of leaders. Every decision is one statement that locks the topic's
// row of task_leader and reads its latest committed version (in an upsert or
// an UPDATE, under READ COMMITTED), on the database clock of that statement:
// decisions on a topic take turns, and each sees the one before. A term is
// current while expires > {now}; ending it sets expires to {now}, so that
// the next statement finds it over. Durations are microseconds.
const (
	// leadTerm inserts the topic's first term (number 1), takes over a term
	// that is over (the next number), or keeps the caller's own current
	// term as it is; it returns nothing when another owner's term is
	// current, or when the topic is not registered. The topic's row is
	// locked against a concurrent Destroy (FOR KEY SHARE).
	leadTerm = `
INSERT INTO {schema}.task_leader AS l (topic, owner, term, expires)
SELECT topic, $2, 1, {now} + $3 * interval '1 microsecond' FROM {schema}.task_topic WHERE topic = $1 FOR KEY SHARE
ON CONFLICT (topic) DO UPDATE
SET owner = EXCLUDED.owner,
    term = CASE WHEN l.expires <= {now} THEN l.term + 1 ELSE l.term END,
    expires = CASE WHEN l.expires <= {now} THEN EXCLUDED.expires ELSE l.expires END
WHERE l.expires <= {now} OR l.owner = EXCLUDED.owner
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
)

// tenure is what a decision on a term returns.
type tenure struct {
	term taskapi.Term
	ok   bool
}

// Lead makes this owner the leader of topic for ttl when no term is current,
// with the next number; returns its current term unchanged when it leads
// already; and reports false, with the current leader's term, when another
// owner leads.
func (r *Repository) Lead(ctx context.Context, db DB, topic string, ttl time.Duration) (taskapi.Term, bool, error) {
	if err := check.Lease(topic, ttl); err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	t, err := retrying(ctx, db, func() (t tenure, err error) {
		err = sealed(ctx, db, func(db DB) (err error) {
			t.term, t.ok, err = scanTerm(db.QueryRow(ctx, r.fleetSQL(leadTerm), topic, r.owner, ttl.Microseconds()), topic)
			return err
		})
		if err != nil || t.ok {
			return t, err
		}
		term, found, err := scanTerm(db.QueryRow(ctx, r.fleetSQL(leaderTerm), topic), topic)
		if err == nil && !found {
			err = unregistered(topic)
		}
		return tenure{term, false}, err
	})
	if err != nil {
		return taskapi.Term{}, false, wrapf(err, "lead topic %q", topic)
	}
	return t.term, t.ok, nil
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

// scanTerm scans a term of topic (owner, number, expires, and the moment of
// the statement) and reports whether there was one.
func scanTerm(row pgx.Row, topic string) (taskapi.Term, bool, error) {
	term := taskapi.Term{Topic: topic}
	var at time.Time
	err := row.Scan(&term.Owner, &term.Number, &term.Expires, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return taskapi.Term{}, false, nil
	case err != nil:
		return taskapi.Term{}, false, err
	}
	term.Expires = utc(term.Expires)
	term.Left = max(term.Expires.Sub(utc(at)), 0)
	return term, true, nil
}
