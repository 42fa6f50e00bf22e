package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testFleet checks what a fleet of consumers controls through the database:
// the activation of topics (taskapi.Activator: stored per topic, running by
// default, shared by every owner, gone with its topic, transactional) and
// the leadership of topics (taskapi.Leader: terms numbered from 1, kept by
// their owner, refused to others while current, renewed, conceded, over on
// the database clock; and never two owners holding current terms at once,
// however many race for it). Every backend's repository must implement both.
func testFleet[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "t"
	all := map[string]func(t *testing.T){}

	all["ActivationRoundTrip"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "u", "v"))
		f.setActivation(topic, taskapi.Paused)
		f.setActivation("u", taskapi.Draining)
		f.wantActivations(f.activator, map[string]taskapi.Activation{topic: taskapi.Paused, "u": taskapi.Draining})
		f.setActivation(topic, taskapi.Running)
		f.setActivation("u", taskapi.Paused)
		want := map[string]taskapi.Activation{topic: taskapi.Running, "u": taskapi.Paused}
		f.wantActivations(f.activator, want)
		// Shared by every owner.
		f.wantActivations(extension[taskapi.Activator[Tx]](t, f.owner("owner-b")), want)
	}

	all["TopicsWithoutActivationRun"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		f.wantActivations(f.activator, map[string]taskapi.Activation{})
		if taskapi.Activation(0) != taskapi.Running {
			t.Errorf("the zero Activation is %v, want RUNNING", taskapi.Activation(0))
		}
	}

	all["ActivationOfAnUnknownTopic"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "gone"))
		f.setActivation(topic, taskapi.Paused)
		f.destroy("gone")
		for _, unknown := range []string{"nowhere", "gone"} {
			err := f.activator.SetActivation(f.ctx, f.db, unknown, taskapi.Paused)
			wantErr(t, err, taskapi.ErrUnknownTopic)
		}
		f.wantActivations(f.activator, map[string]taskapi.Activation{topic: taskapi.Paused})
	}

	all["ActivationRejectsBadValues"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			err := f.activator.SetActivation(f.ctx, f.db, bad.value, taskapi.Paused)
			if !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("SetActivation of a topic %s: error = %v, want %v", bad.name, err, taskapi.ErrInvalidArgument)
			}
		}
		for _, bad := range []taskapi.Activation{-1, taskapi.Draining + 1} {
			err := f.activator.SetActivation(f.ctx, f.db, topic, bad)
			if !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("SetActivation(%v): error = %v, want %v", bad, err, taskapi.ErrInvalidArgument)
			}
		}
		f.wantActivations(f.activator, map[string]taskapi.Activation{})
	}

	all["DestroyForgetsTheActivation"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "kept"))
		f.setActivation(topic, taskapi.Draining)
		f.setActivation("kept", taskapi.Paused)
		f.destroy(topic)
		f.wantActivations(f.activator, map[string]taskapi.Activation{"kept": taskapi.Paused})
		f.initialize(topic)
		f.wantActivations(f.activator, map[string]taskapi.Activation{"kept": taskapi.Paused})
	}

	all["ActivationFollowsTheCallersTransaction"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		tx, end := f.begin()
		f.must(f.activator.SetActivation(f.ctx, tx, topic, taskapi.Paused), "SetActivation in a transaction")
		f.wantActivationsOn(tx, map[string]taskapi.Activation{topic: taskapi.Paused})
		end(false)
		f.wantActivations(f.activator, map[string]taskapi.Activation{})
		tx, end = f.begin()
		f.must(f.activator.SetActivation(f.ctx, tx, topic, taskapi.Draining), "SetActivation in a transaction")
		end(true)
		f.wantActivations(f.activator, map[string]taskapi.Activation{topic: taskapi.Draining})
	}

	all["FirstLeadIssuesTermOne"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Minute)
		if term.Topic != topic || term.Owner != Owner || term.Number != 1 {
			t.Errorf("first term = %s, want term 1 of %q led by %q", termString(term), topic, Owner)
		}
		if term.Left <= 0 || term.Left > time.Minute || term.Expires.Location() != time.UTC {
			t.Errorf("first term = %s, want some of its minute left and an end in UTC", termString(term))
		}
	}

	all["TheLeaderGetsItsTermBack"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		first := f.mustLead(f.leader, topic, time.Minute)
		again := f.mustLead(f.leader, topic, time.Hour)
		if again.Number != first.Number || again.Owner != Owner || !again.Expires.Equal(first.Expires) {
			t.Errorf("Lead by the leader = %s, want its term unchanged: %s", termString(again), termString(first))
		}
		if again.Left <= 0 || again.Left > first.Left {
			t.Errorf("Lead by the leader left %v of the term, want at most the %v left before", again.Left, first.Left)
		}
	}

	all["AnotherOwnerIsRefusedTheCurrentTerm"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		current := f.mustLead(f.leader, topic, time.Minute)
		other := f.leaderFor("owner-b")
		for range 2 {
			term, ok, err := other.Lead(f.ctx, f.db, topic, time.Minute)
			f.must(err, "Lead by owner-b")
			if ok || !sameTerm(term, current) {
				t.Errorf("Lead by owner-b = %s, %v; want false with the current term %s", termString(term), ok, termString(current))
			}
		}
		f.wantLeader(topic, current)
	}

	all["RenewExtendsTheTerm"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Minute)
		renewed, ok, err := f.leader.Renew(f.ctx, f.db, term, time.Hour)
		f.must(err, "Renew")
		if !ok || renewed.Number != term.Number || renewed.Owner != Owner || renewed.Topic != topic ||
			!renewed.Expires.After(term.Expires) || renewed.Left <= term.Left || renewed.Left > time.Hour {
			t.Fatalf("Renew for an hour = %s, %v; want term %d ending later than %s", termString(renewed), ok, term.Number, termString(term))
		}
		// A renewal never shortens a term.
		again, ok, err := f.leader.Renew(f.ctx, f.db, renewed, time.Minute)
		f.must(err, "Renew for less")
		if !ok || again.Number != term.Number || !again.Expires.Equal(renewed.Expires) {
			t.Errorf("Renew for a minute = %s, %v; want the term ending as before, %s", termString(again), ok, termString(renewed))
		}
		f.wantLeader(topic, renewed)
	}

	all["StaleTermsAreNotRenewed"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		current := f.mustLead(f.leader, topic, time.Minute)
		other := f.leaderFor("owner-b")
		stale := map[string]struct {
			leader taskapi.Leader[Tx]
			term   taskapi.Term
		}{
			"another owner's term":         {other, current},
			"a term claimed by another":    {other, withOwner(current, "owner-b")},
			"a term of another owner":      {f.leader, withOwner(current, "owner-b")},
			"a later number":               {f.leader, withNumber(current, current.Number+1)},
			"an earlier number":            {f.leader, withNumber(current, current.Number-1)},
			"a term of an unknown topic":   {f.leader, withTopic(current, "nowhere")},
			"a term of a topic never led":  {f.leader, withTopic(current, "u")},
			"the zero term of this topic":  {f.leader, taskapi.Term{Topic: topic}},
			"this owner's term, number 0":  {f.leader, withNumber(current, 0)},
			"another owner's term, number": {other, withNumber(current, 2)},
		}
		f.initialize("u")
		for _, name := range slices.Sorted(maps.Keys(stale)) {
			s := stale[name]
			renewed, ok, err := s.leader.Renew(f.ctx, f.db, s.term, time.Hour)
			f.must(err, "Renew of %s", name)
			if ok || renewed != (taskapi.Term{}) {
				t.Errorf("Renew of %s = %s, %v; want false and the zero term", name, termString(renewed), ok)
			}
			f.must(s.leader.Concede(f.ctx, f.db, s.term), "Concede of %s", name)
			f.wantLeader(topic, current)
		}
		// Expired: on the database clock, however long the wait took here.
		short := f.mustLead(f.leader, "u", 50*time.Millisecond)
		f.waitForTheDatabase(short.Expires)
		renewed, ok, err := f.leader.Renew(f.ctx, f.db, short, time.Hour)
		f.must(err, "Renew of an expired term")
		if ok {
			t.Errorf("Renew of an expired term = %s, true; want false", termString(renewed))
		}
		f.must(f.leader.Concede(f.ctx, f.db, short), "Concede of an expired term")
		if next := f.mustLead(other, "u", time.Minute); next.Number != short.Number+1 {
			t.Errorf("Lead after the refused renewal = %s, want term %d", termString(next), short.Number+1)
		}
	}

	all["ConcedeLetsAnotherLeadAtOnce"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		first := f.mustLead(f.leader, topic, time.Hour)
		f.must(f.leader.Concede(f.ctx, f.db, first), "Concede")
		other := f.leaderFor("owner-b")
		second := f.mustLead(other, topic, time.Hour)
		if second.Number != first.Number+1 || second.Owner != "owner-b" {
			t.Errorf("Lead after Concede = %s, want term %d of owner-b", termString(second), first.Number+1)
		}
		if renewed, ok, err := f.leader.Renew(f.ctx, f.db, first, time.Hour); err != nil || ok {
			t.Errorf("Renew of the conceded term = %s, %v, %v; want false", termString(renewed), ok, err)
		}
		f.must(f.leader.Concede(f.ctx, f.db, first), "Concede of the conceded term")
		f.wantLeader(topic, second)
		// The owner that conceded leads again with the next number.
		f.must(other.Concede(f.ctx, f.db, second), "Concede by owner-b")
		if third := f.mustLead(f.leader, topic, time.Hour); third.Number != second.Number+1 || third.Owner != Owner {
			t.Errorf("Lead after the second Concede = %s, want term %d of %q", termString(third), second.Number+1, Owner)
		}
	}

	all["AnExpiredTermLetsAnotherLead"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		first := f.mustLead(f.leader, topic, 50*time.Millisecond)
		f.waitForTheDatabase(first.Expires)
		other := f.leaderFor("owner-b")
		second := f.mustLead(other, topic, time.Minute)
		if second.Number != first.Number+1 || second.Owner != "owner-b" {
			t.Errorf("Lead after the term expired = %s, want term %d of owner-b", termString(second), first.Number+1)
		}
		if term, ok, err := f.leader.Lead(f.ctx, f.db, topic, time.Minute); err != nil || ok || !sameTerm(term, second) {
			t.Errorf("Lead by the former leader = %s, %v, %v; want false with %s", termString(term), ok, err, termString(second))
		}
	}

	all["LeadOfAnUnknownTopic"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic, "gone"))
		gone := f.mustLead(f.leader, "gone", time.Hour)
		f.destroy("gone")
		for _, unknown := range []string{"nowhere", "gone"} {
			term, ok, err := f.leader.Lead(f.ctx, f.db, unknown, time.Minute)
			wantErr(t, err, taskapi.ErrUnknownTopic)
			if ok || term != (taskapi.Term{}) {
				t.Errorf("Lead of an unknown topic = %s, %v; want the zero term", termString(term), ok)
			}
		}
		if renewed, ok, err := f.leader.Renew(f.ctx, f.db, gone, time.Hour); err != nil || ok {
			t.Errorf("Renew of the term of a destroyed topic = %s, %v, %v; want false", termString(renewed), ok, err)
		}
		f.must(f.leader.Concede(f.ctx, f.db, gone), "Concede of the term of a destroyed topic")
		// Destroying a topic ends its terms; they start from 1 again.
		f.initialize("gone")
		if again := f.mustLead(f.leaderFor("owner-b"), "gone", time.Hour); again.Number != 1 || again.Owner != "owner-b" {
			t.Errorf("Lead of the topic initialized again = %s, want term 1 of owner-b", termString(again))
		}
	}

	all["LeadershipRejectsBadValues"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		term := f.mustLead(f.leader, topic, time.Hour)
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			_, _, err := f.leader.Lead(f.ctx, f.db, bad.value, time.Minute)
			f.wantInvalid(err, "Lead of a topic %s", bad.name)
			_, _, err = f.leader.Renew(f.ctx, f.db, withTopic(term, bad.value), time.Minute)
			f.wantInvalid(err, "Renew of a term of a topic %s", bad.name)
			f.wantInvalid(f.leader.Concede(f.ctx, f.db, withTopic(term, bad.value)), "Concede of a term of a topic %s", bad.name)
		}
		for _, ttl := range []time.Duration{0, -time.Second, time.Millisecond - time.Microsecond} {
			_, _, err := f.leader.Lead(f.ctx, f.db, topic, ttl)
			f.wantInvalid(err, "Lead for %v", ttl)
			_, _, err = f.leader.Renew(f.ctx, f.db, term, ttl)
			f.wantInvalid(err, "Renew for %v", ttl)
		}
		f.wantLeader(topic, term)
	}

	all["LeadFollowsTheCallersTransaction"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		tx, end := f.begin()
		term, ok, err := f.leader.Lead(f.ctx, tx, topic, time.Hour)
		f.must(err, "Lead in a transaction")
		if !ok || term.Number != 1 {
			t.Fatalf("Lead in a transaction = %s, %v; want term 1", termString(term), ok)
		}
		end(false)
		other := f.leaderFor("owner-b")
		again := f.mustLead(other, topic, time.Hour)
		if again.Number != 1 || again.Owner != "owner-b" {
			t.Errorf("Lead after a rollback = %s, want term 1 of owner-b", termString(again))
		}
		tx, end = f.begin()
		renewed, ok, err := other.Renew(f.ctx, tx, again, 2*time.Hour)
		f.must(err, "Renew in a transaction")
		if !ok {
			t.Fatalf("Renew in a transaction = %s, false", termString(renewed))
		}
		f.must(other.Concede(f.ctx, tx, renewed), "Concede in a transaction")
		end(true)
		if third := f.mustLead(f.leader, topic, time.Hour); third.Number != 2 || third.Owner != Owner {
			t.Errorf("Lead after a committed Concede = %s, want term 2 of %q", termString(third), Owner)
		}
	}

	all["ConcurrentLeadersNeverOverlap"] = func(t *testing.T) {
		f := fleetOf(setup(t, b, topic))
		newLeaderRace(f, topic).run()
	}

	cases(t, all)
}

// fleet is a case's env with its repository as Activator and Leader, and
// the probe that reads the database clock.
type fleet[Tx any] struct {
	*world[Tx]
	activator taskapi.Activator[Tx]
	leader    taskapi.Leader[Tx]
	clock     taskapi.Leader[Tx]
}

// clockTopic is the topic that the probe of the database clock leads.
const clockTopic = "clock"

// fleetOf wraps the env that setup returned; it fails the test unless the
// backend's repositories are Activators and Leaders.
func fleetOf[Tx any](e *env[Tx]) *fleet[Tx] {
	e.t.Helper()
	f := &fleet[Tx]{world: worldOf(e), activator: extension[taskapi.Activator[Tx]](e.t, e.repo), leader: extension[taskapi.Leader[Tx]](e.t, e.repo)}
	f.initialize(clockTopic)
	f.clock = f.leaderFor("owner-clock")
	return f
}

// leaderFor returns a Leader for owner, which need not be registered.
func (f *fleet[Tx]) leaderFor(owner string) taskapi.Leader[Tx] {
	f.t.Helper()
	repo, err := f.b.New(owner)
	f.must(err, "New(%q)", owner)
	return extension[taskapi.Leader[Tx]](f.t, repo)
}

func (f *fleet[Tx]) initialize(topic string) {
	f.t.Helper()
	_, err := f.repo.Initialize(f.ctx, f.db, topic)
	f.must(err, "Initialize(%q)", topic)
}

func (f *fleet[Tx]) destroy(topic string) {
	f.t.Helper()
	_, err := f.repo.Destroy(f.ctx, f.db, topic)
	f.must(err, "Destroy(%q)", topic)
}

func (f *fleet[Tx]) setActivation(topic string, a taskapi.Activation) {
	f.t.Helper()
	f.must(f.activator.SetActivation(f.ctx, f.db, topic, a), "SetActivation(%q, %v)", topic, a)
}

// wantActivations fails the test unless a's Activations are want.
func (f *fleet[Tx]) wantActivations(a taskapi.Activator[Tx], want map[string]taskapi.Activation) {
	f.t.Helper()
	got, err := a.Activations(f.ctx, f.db)
	f.must(err, "Activations")
	if !maps.Equal(got, want) {
		f.t.Errorf("Activations = %v, want %v", got, want)
	}
}

// wantActivationsOn fails the test unless the Activations read on h are want.
func (f *fleet[Tx]) wantActivationsOn(h Tx, want map[string]taskapi.Activation) {
	f.t.Helper()
	got, err := f.activator.Activations(f.ctx, h)
	f.must(err, "Activations on the transaction")
	if !maps.Equal(got, want) {
		f.t.Errorf("Activations on the transaction = %v, want %v", got, want)
	}
}

// mustLead leads topic with l and fails the test unless l leads it.
func (f *fleet[Tx]) mustLead(l taskapi.Leader[Tx], topic string, ttl time.Duration) taskapi.Term {
	f.t.Helper()
	term, ok, err := l.Lead(f.ctx, f.db, topic, ttl)
	f.must(err, "Lead(%q, %v)", topic, ttl)
	if !ok {
		f.t.Fatalf("Lead(%q, %v) refused: %s leads", topic, ttl, termString(term))
	}
	return term
}

// wantLeader fails the test unless term is the current term of topic, as
// another owner's Lead reports it.
func (f *fleet[Tx]) wantLeader(topic string, term taskapi.Term) {
	f.t.Helper()
	got, ok, err := f.leaderFor("owner-observer").Lead(f.ctx, f.db, topic, time.Minute)
	f.must(err, "Lead by an observer")
	if ok || !sameTerm(got, term) {
		f.t.Errorf("the term of %q is %s (observer leads: %v), want %s", topic, termString(got), ok, termString(term))
	}
}

// databaseNow returns the moment of a statement on the database clock: the
// probe's own current term tells how long it has left.
func (f *fleet[Tx]) databaseNow() time.Time {
	f.t.Helper()
	term, ok, err := f.clock.Lead(f.ctx, f.db, clockTopic, time.Hour)
	f.must(err, "Lead of the clock's topic")
	if !ok || term.Left <= 0 {
		f.t.Fatalf("the clock's probe does not lead its topic: %s, %v", termString(term), ok)
	}
	return term.Expires.Add(-term.Left)
}

// waitForTheDatabase polls the database clock until it reaches at.
func (f *fleet[Tx]) waitForTheDatabase(at time.Time) {
	f.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if !f.databaseNow().Before(at) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the database clock did not reach %v within a minute", at)
		}
	}
}

// awaitClock reads the database clock until it reaches at. Unlike
// waitForTheDatabase, whose probe leads a topic, it only reads (Clock.Now):
// it waits for no writer, so that a case may wait while a transaction of
// its own holds a lock, on SQLite the write lock.
func (f *fleet[Tx]) awaitClock(at time.Time) {
	f.t.Helper()
	clock := extension[taskapi.Clock[Tx]](f.t, f.repo)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		now, err := clock.Now(f.ctx, f.db)
		f.must(err, "Now")
		if !now.Before(at) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the database clock did not reach %v within a minute", at)
		}
	}
}

// heldOff runs call, named what, beside a transaction of the case that
// must hold it off: it fails the test when call returns within holdOff,
// then commits the transaction with end and returns call's error once call
// has returned, which must be within hungAfter of the commit.
func (f *fleet[Tx]) heldOff(what string, end func(commit bool), call func() error) error {
	f.t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		end(false)
		f.t.Fatalf("%s returned while the transaction was open (error %v): it did not wait", what, err)
	case <-time.After(holdOff):
	}
	end(true)
	select {
	case err := <-done:
		return err
	case <-time.After(hungAfter):
		f.t.Fatalf("%s did not return within %v of the commit", what, hungAfter)
		return nil
	}
}

// mustRenew renews term for ttl with Owner's Leader and fails the test
// unless it was renewed.
func (f *fleet[Tx]) mustRenew(term taskapi.Term, ttl time.Duration) taskapi.Term {
	f.t.Helper()
	renewed, ok, err := f.leader.Renew(f.ctx, f.db, term, ttl)
	f.must(err, "Renew(%s, %v)", termString(term), ttl)
	if !ok {
		f.t.Fatalf("Renew(%s, %v) refused", termString(term), ttl)
	}
	return renewed
}

// wantHold fails the test unless Owner's Hold of term on h reports want,
// without an error.
func (f *fleet[Tx]) wantHold(h Tx, term taskapi.Term, want bool, format string, args ...any) {
	f.t.Helper()
	held, err := f.leader.Hold(f.ctx, h, term)
	f.must(err, "Hold of %s", fmt.Sprintf(format, args...))
	if held != want {
		f.t.Errorf("Hold of %s (%s) = %v, want %v", fmt.Sprintf(format, args...), termString(term), held, want)
	}
}

// wantInvalid fails the test unless err is ErrInvalidArgument.
func (f *fleet[Tx]) wantInvalid(err error, format string, args ...any) {
	f.t.Helper()
	if !errors.Is(err, taskapi.ErrInvalidArgument) {
		f.t.Errorf("%s: error = %v, want %v", fmt.Sprintf(format, args...), err, taskapi.ErrInvalidArgument)
	}
}

// sameTerm reports whether a and b are the same term: topic, owner, number
// and end (not the time left, which depends on when it was read).
func sameTerm(a, b taskapi.Term) bool {
	return a.Topic == b.Topic && a.Owner == b.Owner && a.Number == b.Number && a.Expires.Equal(b.Expires)
}

func withOwner(t taskapi.Term, owner string) taskapi.Term { t.Owner = owner; return t }
func withNumber(t taskapi.Term, n int64) taskapi.Term     { t.Number = n; return t }
func withTopic(t taskapi.Term, topic string) taskapi.Term { t.Topic = topic; return t }

// termString describes a term for messages.
func termString(t taskapi.Term) string {
	return fmt.Sprintf("term %d of %q led by %q until %s (%v left)",
		t.Number, shortName(t.Topic), t.Owner, t.Expires.Format("15:04:05.000000"), t.Left)
}

// shortName cuts a long name for messages.
func shortName(s string) string {
	if len(s) > 20 {
		return strings.ToValidUTF8(s[:20], "") + "…"
	}
	return s
}

// Leaders racing for one topic.
const (
	leaderRacers = 8
	leaderRounds = 60 // per racer
)

// leaderRace is owners racing for the leadership of one topic, and what
// they were told.
type leaderRace[Tx any] struct {
	f       *fleet[Tx]
	topic   string
	mu      sync.Mutex
	held    []heldTerm       // every term a racer was told it holds
	owners  map[int64]string // who holds each number, as any answer said
	ceded   map[int64]bool   // the numbers their owner conceded
	answers [][]int64        // per racer, the numbers it was told of, in order
}

// heldTerm is a term that a racer was told it holds: by Lead or Renew, at a
// moment of the database clock (Expires - Left).
type heldTerm struct {
	number    int64
	owner     string
	at, until time.Time
}

func newLeaderRace[Tx any](f *fleet[Tx], topic string) *leaderRace[Tx] {
	return &leaderRace[Tx]{f: f, topic: topic, owners: map[int64]string{}, ceded: map[int64]bool{},
		answers: make([][]int64, leaderRacers)}
}

// run lets the racers lead, renew and concede at random, with terms of a
// few milliseconds, so that terms are taken over when conceded and when
// they expire, and then checks what they were told.
func (r *leaderRace[Tx]) run() {
	t := r.f.t
	ctx, cancel := context.WithTimeout(r.f.ctx, raceDeadline)
	defer cancel()
	var wg sync.WaitGroup
	for g := range leaderRacers {
		owner := fmt.Sprint("leader-", g)
		l := r.f.leaderFor(owner)
		wg.Go(func() {
			if err := r.race(ctx, g, owner, l); err != nil {
				t.Errorf("racer %d: %v", g, err)
			}
		})
	}
	wg.Wait()
	r.check()
}

// race is one racer: leading when it does not hold a term, else renewing,
// conceding, or idling.
func (r *leaderRace[Tx]) race(ctx context.Context, g int, owner string, l taskapi.Leader[Tx]) error {
	var (
		term    taskapi.Term
		holding bool
	)
	for range leaderRounds {
		ttl := time.Duration(1+rand.N(8)) * time.Millisecond
		var (
			ok  bool
			err error
		)
		switch choice := rand.N(4); {
		case !holding:
			term, ok, err = l.Lead(ctx, r.f.db, r.topic, ttl)
			if err == nil {
				r.told(g, owner, term, ok)
			}
		case choice < 2:
			var renewed taskapi.Term
			renewed, ok, err = l.Renew(ctx, r.f.db, term, ttl)
			if err == nil && ok {
				term = renewed
				r.told(g, owner, term, true)
			}
		case choice == 2:
			err = l.Concede(ctx, r.f.db, term)
			r.conceded(term.Number)
		default:
			time.Sleep(time.Duration(rand.N(3)) * time.Millisecond)
			ok = true
		}
		if err != nil {
			return err
		}
		holding = ok
	}
	return nil
}

// told records an answer of Lead or Renew to owner, racer g.
func (r *leaderRace[Tx]) told(g int, owner string, term taskapi.Term, holds bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[g] = append(r.answers[g], term.Number)
	if was, ok := r.owners[term.Number]; ok && was != term.Owner {
		r.f.t.Errorf("term %d was told to be %q's and %q's", term.Number, was, term.Owner)
	}
	r.owners[term.Number] = term.Owner
	if !holds {
		return
	}
	if term.Owner != owner || term.Topic != r.topic || term.Left <= 0 {
		r.f.t.Errorf("%q was told it holds %s", owner, termString(term))
	}
	r.held = append(r.held, heldTerm{number: term.Number, owner: term.Owner, at: term.Expires.Add(-term.Left), until: term.Expires})
}

func (r *leaderRace[Tx]) conceded(number int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ceded[number] = true
}

// check fails the test unless the answers tell of one leader at a time: a
// racer learns of ever higher numbers; and on the database clock, every
// term a racer held began after the one before it had ended (or had been
// conceded) and after the last moment its owner was told it held it.
func (r *leaderRace[Tx]) check() {
	t := r.f.t
	for g, numbers := range r.answers {
		if !slices.IsSorted(numbers) {
			t.Errorf("racer %d learned of terms in this order: %v", g, numbers)
		}
	}
	type span struct {
		first, last, until time.Time
	}
	spans := map[int64]*span{}
	for _, h := range r.held {
		s, ok := spans[h.number]
		if !ok {
			spans[h.number] = &span{first: h.at, last: h.at, until: h.until}
			continue
		}
		if h.at.Before(s.first) {
			s.first = h.at
		}
		if h.at.After(s.last) {
			s.last = h.at
		}
		if h.until.After(s.until) {
			s.until = h.until
		}
	}
	numbers := slices.Sorted(maps.Keys(spans))
	if len(numbers) < 2 {
		t.Errorf("the race saw %d terms held; want the leadership to change hands", len(numbers))
	}
	for i := 1; i < len(numbers); i++ {
		before, after := spans[numbers[i-1]], spans[numbers[i]]
		if after.first.Before(before.last) {
			t.Errorf("term %d was issued at %v, before term %d was last held, at %v",
				numbers[i], after.first, numbers[i-1], before.last)
		}
		if !r.ceded[numbers[i-1]] && after.first.Before(before.until) {
			t.Errorf("term %d was issued at %v, before term %d ended, at %v",
				numbers[i], after.first, numbers[i-1], before.until)
		}
	}
	t.Logf("%d terms held in %d answers", len(numbers), len(r.held))
}
