package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Transactions that hold a term in overlapping turns while the owner renews
// it.
const (
	// termHolders is how many goroutines hold the term, each in a loop of
	// transactions.
	termHolders = 8
	// holdPause is how long a transaction that held the term stays open,
	// at most, for another transaction to hold it after it (see holdOnce).
	holdPause = 20 * time.Millisecond
	// renewingFor is how long the owner renews the term while they hold
	// it, and asks for a Lead of another owner.
	renewingFor = 2 * time.Second
	// starvedAfter is the deadline of each Renew and Lead among the
	// holders: far longer than any of them waits for the holders that
	// came before it, so that only one that waits for holders that came
	// after it, starved, runs out of it.
	starvedAfter = 10 * time.Second
)

// testTermHolds checks Leader.Hold, the check of a term that ends the
// transaction settling the work of an exclusive consumer: Hold reports a
// term current while it is this owner's term of the topic, with the
// topic's current Number, neither expired nor conceded on the database
// clock (a renewed term too), and otherwise false with no error, for a
// topic never led or not registered too; a term of another owner, a Number
// below one or a bad topic name are ErrInvalidArgument; Hold changes
// nothing, and a false Hold or an error leaves the caller's transaction
// usable. After a Hold that reported true inside a transaction, no new
// term of the topic begins until the transaction ends: not by a Lead that
// takes the term over, nor by one after the topic was destroyed and
// initialized again. Many transactions holding the term in turns starve
// neither the owner's Renew nor another owner's Lead.
func testTermHolds[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["TheCurrentTermIsHeld"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Hour)
		f.wantHold(f.db, term, true, "the current term on the pool")
		tx, end := f.begin()
		mine := f.pushOn(tx, topic, taskapi.Append, taskapi.Creation{Identifier: "mine"})[0]
		f.wantHold(tx, term, true, "the current term in a transaction")
		end(true)
		f.wantState(topic, mine.Sequence, taskapi.Ready)
		// A renewed term is the same term, as Lead issued it or renewed.
		renewed := f.mustRenew(term, 2*time.Hour)
		f.wantHold(f.db, renewed, true, "the renewed term")
		f.wantHold(f.db, term, true, "the term as Lead issued it, renewed since")
		again := f.mustLead(f.leader, topic, time.Minute)
		f.wantHold(f.db, again, true, "the term as the leader's Lead returned it again")
		f.wantLeader(topic, renewed)
	}

	all["ATermThatIsNotCurrentIsNotHeld"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "expired", "conceded", "taken", "never", "gone"))
		other := f.leaderFor("owner-b")
		current := f.mustLead(f.leader, topic, time.Hour)
		expired := f.mustLead(f.leader, "expired", 50*time.Millisecond)
		conceded := f.mustLead(f.leader, "conceded", time.Hour)
		f.must(f.leader.Concede(f.ctx, f.db, conceded), "Concede")
		taken := f.mustLead(f.leader, "taken", 50*time.Millisecond)
		f.waitForTheDatabase(taken.Expires)
		theirs := f.mustLead(other, "taken", time.Hour)
		f.must(other.Concede(f.ctx, f.db, theirs), "Concede by owner-b")
		later := f.mustLead(f.leader, "taken", time.Hour) // Owner leads again, with the next number
		gone := f.mustLead(f.leader, "gone", time.Hour)
		f.destroy("gone")
		f.waitForTheDatabase(expired.Expires)
		stale := map[string]taskapi.Term{
			"an expired term":                   expired,
			"a conceded term":                   conceded,
			"a term taken over by another":      taken,
			"an earlier term of the leader":     withNumber(later, theirs.Number),
			"the next number of a current term": withNumber(current, current.Number+1),
			"a term of a topic never led":       {Topic: "never", Owner: Owner, Number: 1},
			"a term of an unknown topic":        {Topic: "nowhere", Owner: Owner, Number: 1},
			"a term of a destroyed topic":       gone,
		}
		before := f.snapshot(topic)
		var pushed []int64
		for _, name := range slices.Sorted(maps.Keys(stale)) {
			term := stale[name]
			f.wantHold(f.db, term, false, "%s on the pool", name)
			// In a transaction: false, and the transaction goes on.
			tx, end := f.begin()
			f.wantHold(tx, term, false, "%s in a transaction", name)
			after := f.pushOn(tx, topic, taskapi.Append, taskapi.Creation{Identifier: "after " + name})[0]
			end(true)
			f.wantState(topic, after.Sequence, taskapi.Ready)
			pushed = append(pushed, after.Sequence)
		}
		f.unchanged(before, pushed...)
		// Nothing changed: the current terms are as they were, and the
		// others are over, taken over by the next number.
		f.wantLeader(topic, current)
		f.wantLeader("taken", later)
		for _, over := range []taskapi.Term{expired, conceded} {
			if next := f.mustLead(other, over.Topic, time.Hour); next.Number != over.Number+1 {
				t.Errorf("Lead of %q after the Holds = %s, want term %d", over.Topic, termString(next), over.Number+1)
			}
		}
		f.initialize("gone")
		if first := f.mustLead(other, "gone", time.Hour); first.Number != 1 {
			t.Errorf("Lead of the topic initialized again = %s, want term 1", termString(first))
		}
	}

	all["HoldRejectsBadValues"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "u"))
		current := f.mustLead(f.leader, topic, time.Hour)
		theirs := f.mustLead(f.leaderFor("owner-b"), "u", time.Hour)
		bad := map[string]taskapi.Term{
			"another owner's term":             theirs,
			"a term claimed for another owner": withOwner(current, "owner-b"),
			"a term number 0":                  withNumber(current, 0),
			"a negative term number":           withNumber(current, -1),
			"the zero term":                    {},
		}
		for _, name := range badNames(taskapi.MaxTopicLength) {
			bad["a term of a topic "+name.name] = withTopic(current, name.value)
		}
		tx, end := f.begin()
		for _, name := range slices.Sorted(maps.Keys(bad)) {
			for _, on := range []struct {
				name string
				h    Tx
			}{{"the pool", f.db}, {"a transaction", tx}} {
				held, err := f.leader.Hold(f.ctx, on.h, bad[name])
				if !errors.Is(err, taskapi.ErrInvalidArgument) || held {
					t.Errorf("Hold of %s on %s = %v, %v; want false, %v", name, on.name, held, err, taskapi.ErrInvalidArgument)
				}
			}
		}
		// The transaction goes on, and holds the current term.
		f.wantHold(tx, current, true, "the current term after the bad values")
		after := f.pushOn(tx, topic, taskapi.Append, taskapi.Creation{Identifier: "after"})[0]
		end(true)
		f.wantState(topic, after.Sequence, taskapi.Ready)
		f.wantLeader(topic, current)
		f.wantLeader("u", theirs)
	}

	// The transaction that completes a task under a term, ended by a Hold
	// that reports the term current, keeps the term from being taken over
	// until it commits: another owner's Lead, on another connection after
	// the term expired, waits for it, and then begins the next term, which
	// the former term's Hold reports over. The completion is committed.
	all["AHeldTermHoldsOffTheNextLeader"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		f.pushIDs(topic, "a")
		term := f.mustLead(f.leader, topic, 3*time.Second) // the transaction holds it well within it
		polled := f.poll(topic, 1, term)
		if len(polled) != 1 {
			t.Fatalf("Poll under the term = %v, want the task", polled)
		}
		tx, end := f.begin()
		f.must(f.repo.Complete(f.ctx, tx, topic, ppcDone(polled[0], taskapi.Success, "done")), "Complete in the transaction")
		f.wantHold(tx, term, true, "the term in the completing transaction")
		f.awaitClock(term.Expires)
		other := f.leaderFor("owner-b")
		var next taskapi.Term
		var ok bool
		err := f.heldOff("Lead by another owner", end, func() (err error) {
			next, ok, err = other.Lead(f.ctx, f.db, topic, time.Hour)
			return err
		})
		f.must(err, "Lead by another owner after the commit")
		if !ok || next.Number != term.Number+1 || next.Owner != "owner-b" {
			t.Errorf("Lead by another owner after the commit = %s, %v; want term %d of owner-b",
				termString(next), ok, term.Number+1)
		}
		f.wantState(topic, polled[0].Sequence, taskapi.Succeeded)
		f.wantHold(f.db, term, false, "the term taken over, on the pool")
		tx, end = f.begin()
		f.wantHold(tx, term, false, "the term taken over, in a transaction")
		end(true)
	}

	// Destroying a topic ends its terms, and its next term is number 1: a
	// term held in a transaction holds off that first term too until the
	// transaction ends.
	all["AHeldTermHoldsOffTheFirstTermAfterDestroy"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Hour)
		tx, end := f.begin()
		f.wantHold(tx, term, true, "the current term in a transaction")
		other := f.leaderFor("owner-b")
		var next taskapi.Term
		var ok bool
		err := f.heldOff("Destroy, Initialize and Lead by another owner", end, func() error {
			if _, err := f.repo.Destroy(f.ctx, f.db, topic); err != nil {
				return fmt.Errorf("destroy: %w", err)
			}
			if _, err := f.repo.Initialize(f.ctx, f.db, topic); err != nil {
				return fmt.Errorf("initialize: %w", err)
			}
			var err error
			next, ok, err = other.Lead(f.ctx, f.db, topic, time.Hour)
			return err
		})
		f.must(err, "Destroy, Initialize and Lead after the commit")
		if !ok || next.Number != 1 || next.Owner != "owner-b" {
			t.Errorf("Lead of the topic initialized again = %s, %v; want term 1 of owner-b", termString(next), ok)
		}
		f.wantHold(f.db, term, false, "the term of the destroyed topic")
	}

	// Transactions of the owner hold its term in overlapping turns (see
	// holdOnce), as the completions of a busy exclusive consumer may, while
	// the owner renews the term and another owner asks to lead, again and
	// again: every Renew returns, renewed, and every Lead, refused, within
	// starvedAfter. Then the owner concedes, and the other owner's Lead
	// takes the topic over while the holders go on (their Holds now report
	// false).
	all["HoldsInTurnsStarveNeitherRenewNorLead"] = func(t *testing.T) {
		if b.SingleWriter {
			// The holders' transactions, begun by Backend.Begin, write:
			// they take turns at the database's write lock with the
			// writes of Renew and Lead, whatever Hold does, and SQLite's
			// busy handler lets a newcomer take the lock before a writer
			// that has waited long.
			t.Skip("one writer at a time: the holders' transactions wait for each other and for every other writer")
		}
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Minute)
		other := f.leaderFor("owner-b")
		h := f.startHolders(term)
		var renewals int
		for start := time.Now(); time.Since(start) < renewingFor || renewals < 3; renewals++ {
			ctx, cancel := context.WithTimeout(f.ctx, starvedAfter)
			renewed, ok, err := f.leader.Renew(ctx, f.db, term, time.Minute)
			if err != nil || !ok {
				cancel()
				h.stop()
				t.Fatalf("Renew %d among the holders = %s, %v, %v; want renewed within %v",
					renewals+1, termString(renewed), ok, err, starvedAfter)
			}
			theirs, ok, err := other.Lead(ctx, f.db, topic, time.Minute)
			cancel()
			if err != nil || ok {
				h.stop()
				t.Fatalf("Lead by another owner among the holders = %s, %v, %v; want refused within %v",
					termString(theirs), ok, err, starvedAfter)
			}
		}
		held := h.held.Load()
		ctx, cancel := context.WithTimeout(f.ctx, starvedAfter)
		defer cancel()
		f.must(f.leader.Concede(ctx, f.db, term), "Concede among the holders")
		next, ok, err := other.Lead(ctx, f.db, topic, time.Minute)
		if err != nil || !ok || next.Number != term.Number+1 {
			h.stop()
			t.Fatalf("Lead by another owner after the Concede, among the holders = %s, %v, %v; want term %d within %v",
				termString(next), ok, err, term.Number+1, starvedAfter)
		}
		h.takenOver.Store(true)
		time.Sleep(holdOff) // the holders go on under the next term
		h.stop()
		t.Logf("%d renewals among %d Holds that found the term current; %d Holds after them",
			renewals, held, h.held.Load()-held+h.refused.Load())
		if held < termHolders {
			t.Errorf("the term was held %d times among %d holders; want the holders to take turns", held, termHolders)
		}
		if n := h.heldAfter.Load(); n > 0 {
			t.Errorf("%d transactions held the term after the Lead that took it over had returned", n)
		}
	}

	cases(t, all)
}

// termHolding is the holders of a term, each a goroutine that runs one
// transaction after the other, each ended by Hold.
type termHolding struct {
	held, refused atomic.Int64 // Holds that reported the term current, over
	// heldAfter counts the Holds that reported the term current though
	// they began after a Lead had taken it over.
	heldAfter atomic.Int64
	takenOver atomic.Bool
	stop      func()
}

// startHolders starts termHolders goroutines that hold term in turns, each
// in one transaction after the other (see holdOnce), until stop, which
// waits for them. A Hold that fails with ErrConflict (a database of one writer, say,
// whose begin found the write lock taken for too long) rolls its
// transaction back and goes on; any other error fails the test.
func (f *fleet[Tx]) startHolders(term taskapi.Term) *termHolding {
	h := &termHolding{}
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	for range termHolders {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := f.holdOnce(h, term); err != nil && !errors.Is(err, taskapi.ErrConflict) {
					f.t.Errorf("a transaction holding %s: %v", termString(term), err)
					return
				}
			}
		})
	}
	var once sync.Once
	h.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	f.t.Cleanup(h.stop)
	return h
}

// holdOnce runs one transaction of a holder: begin, Hold, and commit once
// another transaction has held the term after this one, or holdPause has
// passed. So the holds overlap: while the holders run, a transaction that
// holds the term is open at every moment, and the next one holds it before
// the last one ends. A database that lets a new shared lock pass a waiting
// exclusive one (PostgreSQL's row locks let a FOR SHARE pass a waiting
// UPDATE) would keep a writer of the term waiting as long as they run; one
// that queues them keeps each holder open for holdPause at most, while the
// next waits behind the writer.
func (f *fleet[Tx]) holdOnce(h *termHolding, term taskapi.Term) error {
	takenOver := h.takenOver.Load()
	tx, end, err := f.b.Begin(f.ctx, f.db)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	held, err := f.leader.Hold(f.ctx, tx, term)
	if err != nil {
		_ = end(false)
		return fmt.Errorf("hold: %w", err)
	}
	switch {
	case !held:
		h.refused.Add(1)
	case takenOver:
		h.heldAfter.Add(1)
	default:
		for n, until := h.held.Add(1), time.Now().Add(holdPause); h.held.Load() == n && time.Now().Before(until); {
			time.Sleep(holdPause / 40)
		}
	}
	if err := end(true); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
