package conformance

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// namedValue is a value for a name or a text, with a name for messages: in
// badNames and badTexts one that some field must reject, in hostileValues
// one that every field must keep as it is.
type namedValue struct {
	name, value string
}

// badNames returns the values a name limited to limit bytes must reject:
// empty, one byte too long, too long in bytes but not in characters, a NUL
// byte and invalid UTF-8.
func badNames(limit int) []namedValue {
	return []namedValue{
		{"empty", ""},
		{"over-long", strings.Repeat("n", limit+1)},
		{"over-long in bytes", strings.Repeat("é", limit/2+1)},
		{"NUL", "a\x00b"},
		{"invalid UTF-8", "a\xffb"},
	}
}

// badTexts returns the values every text, even unbounded, must reject.
func badTexts() []namedValue {
	return []namedValue{{"NUL", "text\x00"}, {"invalid UTF-8", "\xc3\x28"}}
}

// testInput checks argument validation: every bad topic, identifier,
// reference, input, output and owner name, every undefined enum value,
// every state a call does not allow and every negative duration fails with
// ErrInvalidArgument, before any work, even where the call would otherwise
// be a no-op; afterwards the stored tasks are unchanged and a valid push
// works. Names at their exact byte limits, also multi-byte, are accepted.
func testInput[Tx any](t *testing.T, b Backend[Tx]) {
	const ta = "alpha"
	all := map[string]func(t *testing.T){}

	// fixture is a topic with a Ready, an Active, a Failed and a Suspended
	// task, that the calls under test name.
	type fixture struct {
		w                                *world[Tx]
		ready, active, failed, suspended taskapi.Task
		before                           []taskapi.Info
	}
	newFixture := func(t *testing.T) *fixture {
		t.Helper()
		w := worldOf(setup(t, b, ta))
		f := &fixture{w: w}
		f.ready = w.task(ta, "r", taskapi.Ready)
		f.active = w.task(ta, "act", taskapi.Active)
		f.failed = w.task(ta, "fail", taskapi.Failed)
		f.suspended = w.suspended(ta, "sus")[0]
		f.before = w.all(ta)
		return f
	}
	// reject runs call, which must fail with ErrInvalidArgument and harm nothing.
	reject := func(f *fixture, label string, call func() error) {
		f.w.t.Helper()
		f.w.rejected(label, call(), taskapi.ErrInvalidArgument, ta, []string{ta}, &f.before)
	}

	all["BadTopic"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		ctx, db, repo := w.ctx, w.db, w.repo
		for _, bad := range badNames(taskapi.MaxTopicLength) {
			topic := bad.value
			calls := map[string]func() error{
				"Push": func() error {
					_, err := repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: "x"})
					return err
				},
				"Push without creations": func() error {
					_, err := repo.Push(ctx, db, topic, taskapi.Append)
					return err
				},
				"Poll": func() error { _, err := repo.Poll(ctx, db, topic, 1); return err },
				"Complete": func() error {
					return repo.Complete(ctx, db, topic, taskapi.Completion{Task: f.active, Decision: taskapi.Decision{Result: taskapi.Success}})
				},
				"Revive": func() error {
					_, err := repo.Revive(ctx, db, topic, taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 10)
					return err
				},
				"ReviveTasks": func() error {
					_, err := repo.ReviveTasks(ctx, db, topic, taskapi.ReviveReset, f.failed)
					return err
				},
				"Join": func() error {
					_, err := repo.Join(ctx, db, topic, taskapi.Eternal, []string{"sus"})
					return err
				},
				"Initialize": func() error { _, err := repo.Initialize(ctx, db, topic); return err },
				"Destroy":    func() error { _, err := repo.Destroy(ctx, db, topic); return err },
				"PurgeAll":   func() error { return repo.PurgeAll(ctx, db, topic) },
				"Purge":      func() error { _, err := repo.Purge(ctx, db, topic, taskapi.Unbounded); return err },
				"Reassign": func() error {
					return repo.Reassign(ctx, db, topic, taskapi.Assignment{Task: f.failed, Result: taskapi.Success})
				},
				"ReassignAll": func() error {
					_, err := repo.ReassignAll(ctx, db, topic, taskapi.Failed, taskapi.Success, taskapi.Unbounded)
					return err
				},
				"Page": func() error {
					_, err := repo.Page(ctx, db, topic, taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
					return err
				},
				"Lookup": func() error { _, _, err := repo.Lookup(ctx, db, topic, f.ready.Sequence); return err },
			}
			if topic != "" { // an empty topic filter means no filter
				calls["Count topic filter"] = func() error {
					_, err := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
					return err
				}
			}
			for _, name := range slices.Sorted(maps.Keys(calls)) {
				reject(f, name+" with "+bad.name+" topic", calls[name])
			}
		}
	}

	all["BadIdentifier"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		for _, bad := range badNames(taskapi.MaxIdentifierLength) {
			for _, insertion := range []taskapi.Insertion{taskapi.Append, taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
				reject(f, "Push("+insertion.String()+") with "+bad.name+" identifier", func() error {
					// A valid creation first: the whole push must be refused.
					_, err := w.repo.Push(w.ctx, w.db, ta, insertion,
						taskapi.Creation{Identifier: "r"}, taskapi.Creation{Identifier: bad.value})
					return err
				})
			}
			reject(f, "Join with "+bad.name+" identifier", func() error {
				_, err := w.repo.Join(w.ctx, w.db, ta, taskapi.Eternal, []string{"sus"}, []string{"r", bad.value})
				return err
			})
		}
	}

	all["BadReference"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		for _, bad := range badNames(taskapi.MaxReferenceLength)[1:] { // an empty reference is absent, not bad
			reject(f, "Push with "+bad.name+" reference", func() error {
				_, err := w.repo.Push(w.ctx, w.db, ta, taskapi.Replace,
					taskapi.Creation{Identifier: "r"}, taskapi.Creation{Identifier: "y", Reference: bad.value})
				return err
			})
		}
	}

	all["BadInputAndOutput"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		for _, bad := range badTexts() {
			reject(f, "Push with "+bad.name+" input", func() error {
				_, err := w.repo.Push(w.ctx, w.db, ta, taskapi.Append,
					taskapi.Creation{Identifier: "ok"}, taskapi.Creation{Identifier: "y", Input: bad.value})
				return err
			})
			reject(f, "Complete with "+bad.name+" output", func() error {
				return w.repo.Complete(w.ctx, w.db, ta, taskapi.Completion{
					Task: f.active, Decision: taskapi.Decision{Result: taskapi.Success, Output: bad.value},
				})
			})
		}
		// Long text is fine: input and output are unbounded.
		long := strings.Repeat("ü", 40000)
		task := w.push(ta, taskapi.Append, taskapi.Creation{Identifier: "long", Input: long})[0]
		if info := w.info(ta, task.Sequence); info.Input != long {
			t.Errorf("a long input did not round-trip (%d bytes back)", len(info.Input))
		}
	}

	all["BadFilters"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		// Filters are names too; an empty one is no filter, so it is not bad.
		for _, bad := range badNames(taskapi.MaxIdentifierLength)[1:] {
			listings := map[string]taskapi.Listing{
				"identifier": {Identifier: bad.value},
				"reference":  {Reference: bad.value},
			}
			countings := map[string]taskapi.Counting{
				"identifier": {Identifier: bad.value},
				"reference":  {Reference: bad.value},
			}
			for _, field := range slices.Sorted(maps.Keys(listings)) {
				reject(f, "Page with "+bad.name+" "+field+" filter", func() error {
					_, err := w.repo.Page(w.ctx, w.db, ta, listings[field], taskapi.Inception, 10, taskapi.Forward)
					return err
				})
				reject(f, "Count with "+bad.name+" "+field+" filter", func() error {
					_, err := w.repo.Count(w.ctx, w.db, taskapi.Recent, countings[field], taskapi.Unbounded)
					return err
				})
			}
		}
	}

	all["UndefinedEnums"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		ctx, db, repo := w.ctx, w.db, w.repo
		ok := taskapi.Creation{Identifier: "x"}
		calls := map[string]func() error{
			"Push Insertion(9)":  func() error { _, err := repo.Push(ctx, db, ta, taskapi.Insertion(9), ok); return err },
			"Push Insertion(-1)": func() error { _, err := repo.Push(ctx, db, ta, taskapi.Insertion(-1), ok); return err },
			"Poll Order(5)":      func() error { _, err := repo.Poll(ctx, db, ta, 1, taskapi.Order(5)); return err },
			"Poll Condition(9)":  func() error { _, err := repo.Poll(ctx, db, ta, 1, taskapi.Condition(9)); return err },
			"Poll FIFO, Condition(-1)": func() error {
				_, err := repo.Poll(ctx, db, ta, 1, taskapi.FIFO, taskapi.Condition(-1))
				return err
			},
			"Complete Result(7)": func() error {
				return repo.Complete(ctx, db, ta, taskapi.Completion{Task: f.active, Decision: taskapi.Decision{Result: taskapi.Result(7)}})
			},
			"Reassign Result(7)": func() error {
				return repo.Reassign(ctx, db, ta, taskapi.Assignment{Task: f.failed, Result: taskapi.Result(7)})
			},
			"ReassignAll to Result(7)": func() error {
				_, err := repo.ReassignAll(ctx, db, ta, taskapi.Failed, taskapi.Result(7), taskapi.Unbounded)
				return err
			},
			"ReassignAll to Result(-1)": func() error {
				_, err := repo.ReassignAll(ctx, db, ta, taskapi.Failed, taskapi.Result(-1), taskapi.Unbounded)
				return err
			},
			"ReassignAll from State(12)": func() error {
				_, err := repo.ReassignAll(ctx, db, ta, taskapi.State(12), taskapi.Success, taskapi.Unbounded)
				return err
			},
			"Revive Revivification(9)": func() error {
				_, err := repo.Revive(ctx, db, ta, taskapi.Revivification(9), taskapi.Failed, taskapi.Unbounded, 10)
				return err
			},
			"Revive State(12)": func() error {
				_, err := repo.Revive(ctx, db, ta, taskapi.ReviveReset, taskapi.State(12), taskapi.Unbounded, 10)
				return err
			},
			"ReviveTasks Revivification(9)": func() error {
				_, err := repo.ReviveTasks(ctx, db, ta, taskapi.Revivification(9), f.failed)
				return err
			},
			"Join Junction(2)": func() error {
				_, err := repo.Join(ctx, db, ta, taskapi.Junction(2), []string{"sus"})
				return err
			},
			"Page Direction(2)": func() error {
				_, err := repo.Page(ctx, db, ta, taskapi.Listing{}, taskapi.Inception, 10, taskapi.Direction(2))
				return err
			},
			"Page State(12) filter": func() error {
				_, err := repo.Page(ctx, db, ta, taskapi.Listing{States: []taskapi.State{taskapi.Ready, taskapi.State(12)}}, taskapi.Inception, 10, taskapi.Forward)
				return err
			},
			"Count Snapshot(2)": func() error {
				_, err := repo.Count(ctx, db, taskapi.Snapshot(2), taskapi.Counting{}, taskapi.Unbounded)
				return err
			},
			"Count State(10) filter": func() error {
				_, err := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{States: []taskapi.State{taskapi.State(10)}}, taskapi.Unbounded)
				return err
			},
			"Purge State(12)": func() error {
				_, err := repo.Purge(ctx, db, ta, taskapi.Unbounded, taskapi.Succeeded, taskapi.State(12))
				return err
			},
			"Purge State(-1)": func() error {
				_, err := repo.Purge(ctx, db, ta, taskapi.Unbounded, taskapi.State(-1))
				return err
			},
		}
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			reject(f, name, calls[name])
		}
	}

	all["StatesNotAllowed"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		for _, state := range []taskapi.State{taskapi.Active, taskapi.Ready, taskapi.Recreated, taskapi.Redundant} {
			reject(f, "Revive "+state.String(), func() error {
				_, err := w.repo.Revive(w.ctx, w.db, ta, taskapi.ReviveAppend, state, taskapi.Unbounded, 10)
				return err
			})
			reject(f, "ReassignAll from "+state.String(), func() error {
				_, err := w.repo.ReassignAll(w.ctx, w.db, ta, state, taskapi.Failure, taskapi.Unbounded)
				return err
			})
		}
	}

	// Validation comes first, also where the call would do nothing anyway.
	all["ValidationBeforeNoop"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		ctx, db, repo := w.ctx, w.db, w.repo
		calls := map[string]func() error{
			"Push empty topic, no creations": func() error { _, err := repo.Push(ctx, db, "", taskapi.Append); return err },
			"Push Insertion(9), no creations": func() error {
				_, err := repo.Push(ctx, db, ta, taskapi.Insertion(9))
				return err
			},
			"Poll size 0, Order(5)": func() error { _, err := repo.Poll(ctx, db, ta, 0, taskapi.Order(5)); return err },
			"Page size 0, Direction(2)": func() error {
				_, err := repo.Page(ctx, db, ta, taskapi.Listing{}, taskapi.Inception, 0, taskapi.Direction(2))
				return err
			},
			"Revive size 0, READY": func() error {
				_, err := repo.Revive(ctx, db, ta, taskapi.ReviveReset, taskapi.Ready, taskapi.Unbounded, 0)
				return err
			},
			"Revive size 0, Revivification(9)": func() error {
				_, err := repo.Revive(ctx, db, ta, taskapi.Revivification(9), taskapi.Failed, taskapi.Unbounded, 0)
				return err
			},
			"ReassignAll from READY in an empty span": func() error {
				_, err := repo.ReassignAll(ctx, db, ta, taskapi.Ready, taskapi.Failure, taskapi.Range{From: 5, To: 1})
				return err
			},
			"Purge State(12) in an empty span": func() error {
				_, err := repo.Purge(ctx, db, ta, taskapi.Range{From: taskapi.Inception, To: taskapi.Inception}, taskapi.State(12))
				return err
			},
			"Join of an unknown topic with an empty identifier": func() error {
				_, err := repo.Join(ctx, db, "nowhere", taskapi.Singular, []string{""})
				return err
			},
		}
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			reject(f, name, calls[name])
		}
	}

	all["NegativeDurations"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		other := w.owner("owner-b")
		task := w.pushIDs(ta, "theirs")[0]
		w.pollExactly(other, ta, task)
		f.before = w.all(ta)
		for _, d := range []time.Duration{-time.Nanosecond, -time.Hour} {
			reject(f, "Owners("+d.String()+")", func() error { _, err := w.repo.Owners(w.ctx, w.db, d); return err })
			reject(f, "Expire("+d.String()+")", func() error { _, err := w.repo.Expire(w.ctx, w.db, d); return err })
			reject(f, "PurgeOwners("+d.String()+")", func() error { _, err := w.repo.PurgeOwners(w.ctx, w.db, d); return err })
		}
		wantStrings(t, "Owners", w.others(time.Hour), []string{"owner-b"})
	}

	all["BadOwnerName"] = func(t *testing.T) {
		f := newFixture(t)
		w := f.w
		owners := w.others(time.Hour)
		for _, bad := range badNames(taskapi.MaxOwnerLength) {
			reject(f, "New with "+bad.name+" owner", func() error {
				repo, err := b.New(bad.value)
				if err == nil && repo != nil {
					_, _ = repo.Register(w.ctx, w.db) // would leave a trace if New accepted it
				}
				return err
			})
		}
		wantStrings(t, "Owners after the bad names", w.others(time.Hour), owners)
		// The exact limit, also in multi-byte characters, is accepted and works.
		for _, name := range []string{strings.Repeat("o", taskapi.MaxOwnerLength), strings.Repeat("é", taskapi.MaxOwnerLength/2)} {
			repo := w.owner(name)
			task := w.pushIDs(ta, "for-"+name[:2])[0]
			w.pollExactly(repo, ta, task)
			if info := w.info(ta, task.Sequence); info.Owner != name {
				t.Errorf("task owner = %q, want the %d-byte name", info.Owner, len(name))
			}
		}
	}

	all["ExactLimitsAccepted"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		topics := []string{
			strings.Repeat("t", taskapi.MaxTopicLength),
			strings.Repeat("é", taskapi.MaxTopicLength/2), // 250 bytes, 125 characters
			"τοπικό ✓",
		}
		creations := []taskapi.Creation{
			{Identifier: strings.Repeat("i", taskapi.MaxIdentifierLength), Reference: strings.Repeat("r", taskapi.MaxReferenceLength)},
			{Identifier: strings.Repeat("😀", taskapi.MaxIdentifierLength/4), Reference: strings.Repeat("€", 166) + "ab", Input: "ünïcödé 😀"},
			{Identifier: "x", Input: strings.Repeat("ß", 5000)},
		}
		for _, topic := range topics {
			created, err := w.repo.Initialize(w.ctx, w.db, topic)
			if err != nil || !created {
				t.Fatalf("Initialize(%d-byte topic) = %v, %v; want true", len(topic), created, err)
			}
			pushed := w.push(topic, taskapi.Append, creations...)
			for i, task := range pushed {
				info := w.info(topic, task.Sequence)
				c := creations[i]
				if info.Identifier != c.Identifier || info.Reference != c.Reference || info.Input != c.Input {
					t.Errorf("%d-byte topic, creation %d did not round-trip", len(topic), i)
				}
			}
			polled := w.poll(topic, 10)
			wantSeqs(t, "Poll", seqsOf(polled...), seqsOf(pushed...))
			w.complete(topic, taskapi.Success, polled...)
			released, err := w.repo.Join(w.ctx, w.db, topic, taskapi.Eternal, []string{creations[0].Identifier, creations[1].Identifier})
			if err != nil || len(released) != 0 {
				t.Errorf("Join of the long identifiers = %q, %v; want nothing released", released, err)
			}
			counts := w.count(taskapi.Total, taskapi.Counting{Topic: topic, Identifier: creations[1].Identifier, Reference: creations[1].Reference}, taskapi.Unbounded)
			if got := counts[topic][taskapi.Succeeded].Count; got != 1 {
				t.Errorf("Count with the long filters = %v, want one SUCCEEDED", counts)
			}
		}
		w.wantTopics(slices.Sorted(slices.Values(topics))...)
	}

	cases(t, all)
}
