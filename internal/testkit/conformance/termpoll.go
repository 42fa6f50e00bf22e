package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// holdOff is how long a case lets a Lead that must wait for a poll's
// transaction run before it checks that the Lead has not returned: a
// longer wait could only catch more, a shorter one let a Lead that never
// waited pass unseen; no length makes a Lead that waits fail the case.
const holdOff = 500 * time.Millisecond

// testTermPolls checks polls under a term (a taskapi.Term as a poll
// option): such a poll claims tasks only while the term is this owner's
// current term of the polled topic on the database clock, and otherwise
// claims nothing, with no error, under every order and condition; a term
// of another topic or owner, a Number below one or two terms are
// ErrInvalidArgument; and no new term of the topic begins until the
// poll's transaction has ended.
func testTermPolls[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["APollUnderTheCurrentTermClaims"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Hour)
		tasks := f.pushIDs(topic, "a", "b", "a", "c", "d")
		ppcWantTasks(t, "Poll(t, 1) under the term", f.poll(topic, 1, term), tasks[:1])
		ppcWantTasks(t, "Poll(t, 1, LIFO) under the term", f.poll(topic, 1, taskapi.LIFO, term), tasks[4:])
		// "a" is Active: its later task waits.
		ppcWantTasks(t, "Poll(t, 10, SingularByIdentifier) under the term",
			f.poll(topic, 10, term, taskapi.SingularByIdentifier), []taskapi.Task{tasks[1], tasks[3]})
		// A renewed term is the same term.
		renewed, ok, err := f.leader.Renew(f.ctx, f.db, term, 2*time.Hour)
		f.must(err, "Renew")
		if !ok {
			t.Fatalf("Renew of the current term refused")
		}
		f.complete(topic, taskapi.Success, tasks[0])
		ppcWantTasks(t, "Poll(t, 10, LIFO, SingularByIdentifier) under the renewed term",
			f.poll(topic, 10, renewed, taskapi.LIFO, taskapi.SingularByIdentifier), tasks[2:3])
	}

	all["APollUnderATermThatIsNotCurrentClaimsNothing"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "expired", "conceded", "taken", "never"))
		other := f.leaderFor("owner-b")
		current := f.mustLead(f.leader, topic, time.Hour)
		expired := f.mustLead(f.leader, "expired", 50*time.Millisecond)
		conceded := f.mustLead(f.leader, "conceded", time.Hour)
		f.must(f.leader.Concede(f.ctx, f.db, conceded), "Concede")
		taken := f.mustLead(f.leader, "taken", 50*time.Millisecond)
		f.waitForTheDatabase(taken.Expires)
		f.mustLead(other, "taken", time.Hour)
		stale := map[string]taskapi.Term{
			"an expired term":               expired,
			"a conceded term":               conceded,
			"a term taken over by another":  taken,
			"the next number of the term":   withNumber(current, current.Number+1),
			"a term of a topic never led":   {Topic: "never", Owner: Owner, Number: 1},
			"a later number of a topic led": withTopic(withNumber(current, 7), "expired"),
		}
		f.waitForTheDatabase(expired.Expires)
		topics := []string{topic, "expired", "conceded", "taken", "never"}
		for _, t := range topics {
			f.pushIDs(t, "a", "b")
		}
		before := f.snapshot(topics...)
		for name, term := range stale {
			for _, opts := range [][]taskapi.PollOption{
				{term}, {term, taskapi.LIFO}, {taskapi.SingularByIdentifier, term},
				{taskapi.LIFO, taskapi.SingularByIdentifierSuspendUntilSuccess, term},
			} {
				got, err := f.repo.Poll(f.ctx, f.db, term.Topic, 10, opts...)
				ppcWantNone(t, fmt.Sprintf("Poll(%q, 10, %v) under %s", term.Topic, opts, name), got, err)
			}
		}
		f.unchanged(before)
		// The current term of the same owner claims.
		if got := f.poll(topic, 10, current); len(got) != 2 {
			t.Errorf("Poll under the current term = %v, want the two tasks of %q", got, topic)
		}
	}

	all["APollUnderAnotherOwnersOrTopicsTermIsInvalid"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "u"))
		current := f.mustLead(f.leader, topic, time.Hour)
		theirs := f.mustLead(f.leaderFor("owner-b"), "u", time.Hour)
		f.pushIDs(topic, "a", "b")
		f.pushIDs("u", "a", "b")
		before := f.snapshot(topic, "u")
		for name, c := range map[string]struct {
			topic string
			opts  []taskapi.PollOption
		}{
			"a term of another topic":            {topic, []taskapi.PollOption{withTopic(current, "u")}},
			"this owner's term of another topic": {"u", []taskapi.PollOption{current}},
			"another owner's term":               {"u", []taskapi.PollOption{theirs}},
			"a term claimed for another owner":   {topic, []taskapi.PollOption{withOwner(current, "owner-b")}},
			"a term number 0":                    {topic, []taskapi.PollOption{withNumber(current, 0)}},
			"a negative term number":             {topic, []taskapi.PollOption{withNumber(current, -1)}},
			"two terms":                          {topic, []taskapi.PollOption{current, current}},
			"a term with contradictory options":  {topic, []taskapi.PollOption{current, taskapi.FIFO, taskapi.LIFO}},
			"the zero term":                      {topic, []taskapi.PollOption{taskapi.Term{}}},
			"a term of no topic":                 {topic, []taskapi.PollOption{withTopic(current, "")}},
		} {
			got, err := f.repo.Poll(f.ctx, f.db, c.topic, 10, c.opts...)
			if !errors.Is(err, taskapi.ErrInvalidArgument) || len(got) != 0 {
				t.Errorf("Poll(%q) with %s = %v, %v; want %v", c.topic, name, got, err, taskapi.ErrInvalidArgument)
			}
		}
		f.unchanged(before)
	}

	// A poll under a term in the caller's transaction keeps the term from
	// being taken over until the transaction ends: another owner's Lead,
	// on another connection after the term expired, waits for it, and
	// then begins the next term; the former term claims nothing.
	all["APollUnderATermHoldsOffTheNextLeader"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		tasks := f.pushIDs(topic, "a", "b")
		term := f.mustLead(f.leader, topic, 3*time.Second) // the poll below claims well within it
		tx, end := f.begin()
		got, err := f.repo.Poll(f.ctx, tx, topic, 1, term)
		f.must(err, "Poll under the term in a transaction")
		ppcWantTasks(t, "Poll under the term in a transaction", got, tasks[:1])
		f.awaitClock(term.Expires)
		other := f.leaderFor("owner-b")
		var next taskapi.Term
		var ok bool
		err = f.heldOff("Lead by another owner", end, func() (err error) {
			next, ok, err = other.Lead(f.ctx, f.db, topic, time.Hour)
			return err
		})
		f.must(err, "Lead by another owner after the commit")
		if !ok || next.Number != term.Number+1 || next.Owner != "owner-b" {
			t.Errorf("Lead by another owner after the commit = %s, %v; want term %d of owner-b",
				termString(next), ok, term.Number+1)
		}
		f.wantState(topic, tasks[0].Sequence, taskapi.Active)
		got, err = f.repo.Poll(f.ctx, f.db, topic, 10, term)
		ppcWantNone(t, "Poll under the term taken over", got, err)
	}

	cases(t, all)
}
