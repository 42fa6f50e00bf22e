package conformance

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// scheduleRounds is how many times the race of advances runs, each from the
// mark the round before set.
const scheduleRounds = 4

// testSchedules checks the marks of schedules (taskapi.Scheduler): Mark and
// Advance by compare-and-set, per topic and name, in UTC to the
// microsecond; the validation of their arguments; Destroy, which deletes a
// topic's marks; and that of concurrent advances from one mark exactly one
// wins.
func testSchedules[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}
	at := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)

	all["MarkOfAnUnknownScheduleIsZero"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t")
		s.wantMark("t", "s", time.Time{})
		s.wantMark("unregistered", "s", time.Time{})
	}

	all["AdvanceFromZeroCreatesTheMarkOnce"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t")
		s.wantAdvance("t", "s", time.Time{}, at, true)
		s.wantMark("t", "s", at)
		s.wantAdvance("t", "s", time.Time{}, at.Add(time.Hour), false)
		s.wantMark("t", "s", at)
	}

	all["AdvanceMovesTheMarkOnlyFromTheMarkItIs"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t")
		s.wantAdvance("t", "s", time.Time{}, at, true)
		s.wantAdvance("t", "s", at, at.Add(time.Hour), true)
		s.wantMark("t", "s", at.Add(time.Hour))
		s.wantAdvance("t", "s", at, at.Add(2*time.Hour), false) // stale
		s.wantAdvance("t", "s", at.Add(-time.Hour), at.Add(2*time.Hour), false)
		s.wantAdvance("t", "s", at.Add(time.Hour+time.Microsecond), at.Add(2*time.Hour), false)
		s.wantMark("t", "s", at.Add(time.Hour))
		s.wantAdvance("t", "s", at.Add(time.Hour), at.Add(2*time.Hour), true)
		s.wantMark("t", "s", at.Add(2*time.Hour))
		s.wantAdvance("t", "other", at, at.Add(time.Hour), false) // no mark yet: only from zero
		s.wantMark("t", "other", time.Time{})
	}

	all["MarksArePerTopicAndName"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t", "u")
		marks := map[[2]string]time.Time{
			{"t", "a"}: at, {"t", "b"}: at.Add(time.Minute), {"u", "a"}: at.Add(2 * time.Minute),
			{"t", "A"}: at.Add(3 * time.Minute), {"t", "a "}: at.Add(4 * time.Minute),
		}
		for key, mark := range marks {
			s.wantAdvance(key[0], key[1], time.Time{}, mark, true)
		}
		s.wantAdvance("t", "a", at, at.Add(time.Hour), true)
		marks[[2]string{"t", "a"}] = at.Add(time.Hour)
		for key, mark := range marks {
			s.wantMark(key[0], key[1], mark)
		}
		s.wantMark("u", "b", time.Time{})
	}

	all["MarksAreKeptToTheMicrosecondInUTC"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t")
		east, west := time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -7*3600)
		given := time.Date(2031, 2, 3, 4, 5, 6, 123456789, east)
		s.wantAdvance("t", "s", time.Time{}, given, true)
		mark := s.mark("t", "s")
		if !mark.Equal(deferredTime(given)) || mark.Location() != time.UTC || mark.Nanosecond()%1000 != 0 {
			t.Fatalf("Mark = %v, want %v in UTC to the microsecond", mark, deferredTime(given))
		}
		// The mark as given, in another zone and with nanoseconds, is the
		// stored mark: Advance from it matches.
		next := time.Date(2031, 2, 3, 5, 5, 6, 999999999, west)
		s.wantAdvance("t", "s", given, next, true)
		s.wantMark("t", "s", next)
		s.wantAdvance("t", "s", deferredTime(next).In(east), next.Add(time.Microsecond), true)
		s.wantMark("t", "s", next.Add(time.Microsecond))
	}

	all["BadArgumentsAreRefusedAndChangeNothing"] = func(t *testing.T) {
		long := strings.Repeat("t", taskapi.MaxTopicLength)
		s := scheduleSetup(t, b, "t", long)
		s.wantAdvance("t", "s", time.Time{}, at, true)
		type call struct {
			name, topic, schedule string
			from, to              time.Time
		}
		calls := []call{
			{"a zero to", "t", "s", at, time.Time{}},
			{"a zero to from zero", "t", "fresh", time.Time{}, time.Time{}},
			{"to before from", "t", "s", at, at.Add(-time.Hour)},
			{"to equal to from", "t", "s", at, at.In(time.FixedZone("east", 3600))},
			{"to within the microsecond of from", "t", "s", at.Add(100), at.Add(900)},
			{"from before the years", "t", "s", time.Date(taskapi.MinYear-1, 12, 31, 0, 0, 0, 0, time.UTC), at},
			{"to after the years", "t", "s", at, time.Date(taskapi.MaxYear+1, 1, 1, 0, 0, 0, 0, time.UTC)},
			{"to before the years from zero", "t", "fresh", time.Time{}, time.Date(taskapi.MinYear-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		}
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			calls = append(calls, call{"topic " + bad.name, bad.value, "s", time.Time{}, at})
		}
		for _, bad := range badNames(taskapi.MaxIdentifierLength) {
			calls = append(calls, call{"name " + bad.name, "t", bad.value, time.Time{}, at})
			if _, err := s.repo.Mark(s.ctx, s.db, "t", bad.value); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Mark of the name %s = %v, want ErrInvalidArgument", bad.name, err)
			}
		}
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			if _, err := s.repo.Mark(s.ctx, s.db, bad.value, "s"); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Mark of the topic %s = %v, want ErrInvalidArgument", bad.name, err)
			}
		}
		for _, c := range calls {
			advanced, err := s.repo.Advance(s.ctx, s.db, c.topic, c.schedule, c.from, c.to)
			if advanced || !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Advance with %s = %v, %v; want false, ErrInvalidArgument", c.name, advanced, err)
			}
		}
		s.wantMark("t", "s", at)
		s.wantMark("t", "fresh", time.Time{})
		// Names at their limits, also in multi-byte characters, are fine.
		for _, name := range []string{strings.Repeat("n", taskapi.MaxIdentifierLength), strings.Repeat("é", taskapi.MaxIdentifierLength/2)} {
			s.wantAdvance("t", name, time.Time{}, at, true)
			s.wantMark("t", name, at)
		}
		s.wantAdvance(long, "s", time.Time{}, at, true)
		s.wantMark(long, "s", at)
	}

	all["DestroyRemovesTheMarksAndPurgeAllKeepsThem"] = func(t *testing.T) {
		s := scheduleSetup(t, b, "t", "u")
		for _, topic := range []string{"t", "u"} {
			s.wantAdvance(topic, "a", time.Time{}, at, true)
			s.wantAdvance(topic, "b", time.Time{}, at, true)
		}
		s.pushIDs("t", "x")
		if err := s.repo.PurgeAll(s.ctx, s.db, "t"); err != nil {
			t.Fatalf("PurgeAll: %v", err)
		}
		s.wantMark("t", "a", at)
		if existed, err := s.repo.Destroy(s.ctx, s.db, "t"); err != nil || !existed {
			t.Fatalf("Destroy = %v, %v; want true", existed, err)
		}
		s.wantMark("t", "a", time.Time{})
		s.wantMark("t", "b", time.Time{})
		s.wantMark("u", "a", at)
		s.wantMark("u", "b", at)
		if _, err := s.repo.Initialize(s.ctx, s.db, "t"); err != nil {
			t.Fatalf("Initialize again: %v", err)
		}
		s.wantMark("t", "a", time.Time{})
		s.wantAdvance("t", "a", time.Time{}, at.Add(time.Hour), true)
		s.wantMark("t", "a", at.Add(time.Hour))
	}

	all["OneOfConcurrentAdvancesFromOneMarkWins"] = func(t *testing.T) {
		r := newRace(t, b, 0)
		var from time.Time // the first round inserts the mark
		for round := range scheduleRounds {
			to := at.Add(time.Duration(round+1) * time.Hour)
			var (
				wins  atomic.Int64
				ready sync.WaitGroup
			)
			ready.Add(racers)
			r.run(func(g int, repo taskapi.Repository[Tx]) error {
				ready.Done()
				ready.Wait() // all at once
				var advanced bool
				err := r.inTx(func(tx Tx) (err error) {
					advanced, err = repo.Advance(r.ctx, tx, "t", "s", from, to)
					return err
				})
				if err == nil && advanced { // as committed: the last attempt
					wins.Add(1)
				}
				return err
			})
			if n := wins.Load(); n != 1 {
				t.Errorf("round %d: %d of %d advances from %v to %v won, want one", round, n, racers, from, to)
			}
			mark, err := r.e.repo.Mark(r.ctx, r.db, "t", "s")
			if err != nil || !mark.Equal(to) {
				t.Fatalf("round %d: Mark = %v, %v; want %v", round, mark, err, to)
			}
			from = to
		}
	}

	cases(t, all)
}

// testNextDue checks NextDue: the earliest NotBefore after now among the
// Ready tasks of a topic, zero when none waits. Times lie minutes or hours
// ahead or back, far beyond any clock skew between the test and the
// database.
func testNextDue[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	all["ZeroWhenNoTaskWaits"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t", "u")
		p.wantNextDue("t", time.Time{})
		p.push("t", taskapi.Append, taskapi.Creation{Identifier: "now"},
			taskapi.Creation{Identifier: "due", NotBefore: time.Now().Add(-time.Hour)})
		p.push("u", taskapi.Append, taskapi.Creation{Identifier: "later", NotBefore: time.Now().Add(time.Hour)})
		p.wantNextDue("t", time.Time{})
		p.wantNextDue("unregistered", time.Time{})
	}

	all["TheEarliestFutureTimeOfTheTopicsReadyTasks"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t", "u")
		now := time.Now()
		in := func(d time.Duration) time.Time { return now.Add(d).Add(123456789 * time.Nanosecond) }
		p.push("u", taskapi.Append, taskapi.Creation{Identifier: "other topic", NotBefore: in(5 * time.Minute)})
		tasks := p.push("t", taskapi.Append,
			taskapi.Creation{Identifier: "late", NotBefore: in(3 * time.Hour)},
			taskapi.Creation{Identifier: "next", NotBefore: in(2 * time.Hour)},
			taskapi.Creation{Identifier: "due", NotBefore: in(-time.Hour)},
			taskapi.Creation{Identifier: "cleared", NotBefore: in(time.Minute)},
			taskapi.Creation{Identifier: "suspended", NotBefore: in(10 * time.Minute), Suspended: true},
			taskapi.Creation{Identifier: "replaced", NotBefore: in(20 * time.Minute)},
			taskapi.Creation{Identifier: "completed", NotBefore: in(30 * time.Minute)})
		// Not Ready, or not waiting: cleared (due at once), due, completed
		// (made due, taken and completed), suspended, and replaced (the
		// deferred one made Redundant by a newer push).
		p.deferTasks("t", time.Time{}, tasks[3])
		p.deferTasks("t", in(-time.Hour), tasks[6])
		p.complete("t", taskapi.Success, p.poll("t", 10)...)
		p.push("t", taskapi.Replace, taskapi.Creation{Identifier: "replaced"})
		p.wantState("t", tasks[2].Sequence, taskapi.Succeeded)
		p.wantState("t", tasks[3].Sequence, taskapi.Succeeded)
		p.wantState("t", tasks[5].Sequence, taskapi.Redundant)
		p.wantState("t", tasks[6].Sequence, taskapi.Succeeded)
		p.wantNextDue("t", in(2*time.Hour))
		p.wantNextDue("u", in(5*time.Minute))
		// The suspended task counts once its group releases it, with its time.
		if released, err := p.repo.Join(p.ctx, p.db, "t", taskapi.Singular, []string{"suspended"}); err != nil || len(released) != 1 {
			t.Fatalf("Join = %v, %v; want the group released", released, err)
		}
		p.wantNextDue("t", in(10*time.Minute))
		p.deferTasks("t", in(time.Minute), tasks[0])
		p.wantNextDue("t", in(time.Minute))
	}

	all["ABadTopicIsRefused"] = func(t *testing.T) {
		p := ppcSetup(t, b, "t")
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			next, err := p.repo.NextDue(p.ctx, p.db, bad.value)
			if !next.IsZero() || !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("NextDue of the topic %s = %v, %v; want ErrInvalidArgument", bad.name, next, err)
			}
		}
	}

	cases(t, all)
}

// wantNextDue fails the test unless NextDue of topic is want as stored (in
// UTC, to the microsecond), or zero for a zero want.
func (p *ppcEnv[Tx]) wantNextDue(topic string, want time.Time) {
	p.t.Helper()
	next, err := p.repo.NextDue(p.ctx, p.db, topic)
	if err != nil {
		p.t.Fatalf("NextDue(%q): %v", topic, err)
	}
	if want.IsZero() && !next.IsZero() || !want.IsZero() && (!next.Equal(deferredTime(want)) || next.Location() != time.UTC) {
		p.t.Errorf("NextDue(%q) = %v, want %v", topic, next, deferredTime(want))
	}
}

// scheduleEnv is env with the helpers of the schedule cases.
type scheduleEnv[Tx any] struct {
	*env[Tx]
}

// scheduleSetup opens a fresh database like setup and wraps it.
func scheduleSetup[Tx any](t *testing.T, b Backend[Tx], topics ...string) *scheduleEnv[Tx] {
	t.Helper()
	return &scheduleEnv[Tx]{env: setup(t, b, topics...)}
}

// mark returns the mark of schedule name of topic and fails the test on
// error.
func (s *scheduleEnv[Tx]) mark(topic, name string) time.Time {
	s.t.Helper()
	mark, err := s.repo.Mark(s.ctx, s.db, topic, name)
	if err != nil {
		s.t.Fatalf("Mark(%q, %q): %v", ppcShort(topic), ppcShort(name), err)
	}
	return mark
}

// wantMark fails the test unless the mark of schedule name of topic is want
// as stored (in UTC, to the microsecond), or zero for a zero want.
func (s *scheduleEnv[Tx]) wantMark(topic, name string, want time.Time) {
	s.t.Helper()
	mark := s.mark(topic, name)
	if want.IsZero() && !mark.IsZero() || !want.IsZero() && (!mark.Equal(deferredTime(want)) || mark.Location() != time.UTC) {
		s.t.Errorf("Mark(%q, %q) = %v, want %v", ppcShort(topic), ppcShort(name), mark, deferredTime(want))
	}
}

// wantAdvance advances schedule name of topic from from to to, and fails
// the test on error or unless it reports want.
func (s *scheduleEnv[Tx]) wantAdvance(topic, name string, from, to time.Time, want bool) {
	s.t.Helper()
	advanced, err := s.repo.Advance(s.ctx, s.db, topic, name, from, to)
	if err != nil || advanced != want {
		s.t.Errorf("Advance(%q, %q, %v, %v) = %v, %v; want %v", ppcShort(topic), ppcShort(name), from, to, advanced, err, want)
	}
}
