package check_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The oracle below restates the rules of taskapi's documentation and the
// README ("The model", "Choices where the contract is silent") without
// calling the package under test: names are non-empty, at most 250 (topic,
// owner) or 500 (identifier, reference, schedule name) bytes, valid UTF-8
// and free of NUL; a reference may be empty; texts (input, output) may be
// anything valid UTF-8 without NUL; a non-zero time lies in the years 1000
// to 9999 (UTC); enums are their documented ordinals.

// The documented limits, in bytes.
const (
	docTopicLimit      = 250
	docOwnerLimit      = 250
	docIdentifierLimit = 500
	docReferenceLimit  = 500
)

// wellFormed reports whether s is well-formed UTF-8 as the Unicode standard
// defines it (table 3-7): no overlong forms, no surrogates, nothing above
// U+10FFFF, no truncated sequence. It is written out byte by byte so that the
// oracle does not share the code under test's use of unicode/utf8.
func wellFormed(s string) bool {
	for i := 0; i < len(s); {
		b := s[i]
		if b < 0x80 {
			i++
			continue
		}
		var n int                        // continuation bytes
		lo, hi := byte(0x80), byte(0xBF) // bounds of the first continuation byte
		switch {
		case b >= 0xC2 && b <= 0xDF:
			n = 1
		case b == 0xE0:
			n, lo = 2, 0xA0
		case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
			n = 2
		case b == 0xED:
			n, hi = 2, 0x9F
		case b == 0xF0:
			n, lo = 3, 0x90
		case b >= 0xF1 && b <= 0xF3:
			n = 3
		case b == 0xF4:
			n, hi = 3, 0x8F
		default:
			return false
		}
		if i+n >= len(s) { // truncated
			return false
		}
		for k := 1; k <= n; k++ {
			c := s[i+k]
			if k == 1 && (c < lo || c > hi) || k > 1 && (c < 0x80 || c > 0xBF) {
				return false
			}
		}
		i += n + 1
	}
	return true
}

// noNUL reports whether s holds no NUL byte.
func noNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return true
}

// textOK is the rule for free text: valid UTF-8, no NUL.
func textOK(s string) bool { return wellFormed(s) && noNUL(s) }

// nameOK is the rule for a name of at most limit bytes; optional names may
// be empty.
func nameOK(s string, limit int, optional bool) bool {
	if s == "" {
		return optional
	}
	return len(s) <= limit && textOK(s)
}

// The bounds of the storable years, as instants: a non-zero time t is
// storable when yearsFrom <= t < yearsTo.
var (
	yearsFrom = time.Date(1000, time.January, 1, 0, 0, 0, 0, time.UTC)
	yearsTo   = time.Date(10000, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// timeOK is the rule for a NotBefore or a mark: zero, or within the years
// 1000 to 9999 in UTC.
func timeOK(t time.Time) bool {
	return t.Equal(time.Time{}) || inYears(t)
}

// inYears reports whether t lies within the years 1000 to 9999 in UTC.
func inYears(t time.Time) bool { return !t.Before(yearsFrom) && t.Before(yearsTo) }

// maxMessage bounds the length of an error message: the caller's text is cut
// after 64 bytes, which %q may spell with four characters each.
const maxMessage = 64*4 + 200

// wantVerdict fails t unless err agrees with the oracle's verdict ok, and,
// for an error, unless it wraps ErrInvalidArgument and its message is short,
// valid UTF-8 and free of NUL (it may be logged or shown on a terminal).
func wantVerdict(t *testing.T, what string, err error, ok bool) {
	t.Helper()
	switch {
	case ok && err != nil:
		t.Fatalf("%s: rejected what the rules allow: %v", what, err)
	case !ok && err == nil:
		t.Fatalf("%s: accepted what the rules forbid", what)
	case err == nil:
		return
	}
	if !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Fatalf("%s: error %v does not wrap ErrInvalidArgument", what, err)
	}
	msg := err.Error()
	if len(msg) > maxMessage || !utf8.ValidString(msg) || strings.IndexByte(msg, 0) >= 0 {
		t.Fatalf("%s: a %d-byte error message %.300q, want at most %d bytes of valid UTF-8 without NUL",
			what, len(msg), msg, maxMessage)
	}
}

// variants returns s and strings made of it at the boundaries of limit: cut
// to limit and limit+1 bytes (possibly in the middle of a character),
// padded with ASCII to limit and limit+1 bytes, and repeated to just over
// limit, so that the fuzzer reaches the limits without growing its input.
func variants(s string, limit int) []string {
	out := []string{s}
	for _, n := range []int{limit, limit + 1} {
		if len(s) >= n {
			out = append(out, s[:n])
		} else {
			out = append(out, s+strings.Repeat("a", n-len(s)))
		}
		if s != "" {
			r := strings.Repeat(s, n/len(s)+1)
			out = append(out, r[:n], r[len(r)-n:])
		}
	}
	return out
}

// FuzzNames checks every name and text check against the rules.
//
// Properties, for any string s and the strings made of it at each limit
// (see variants):
//   - no check panics;
//   - Topic and Owner accept exactly the non-empty, valid UTF-8 strings
//     without NUL of at most 250 bytes; Identifier and Schedule the same of
//     at most 500 bytes; Reference the same, or the empty string; Text any
//     valid UTF-8 without NUL, of any length, the empty string included;
//   - every error wraps taskapi.ErrInvalidArgument, and its message is at
//     most a few hundred bytes of valid UTF-8 without NUL, however long or
//     malformed s is;
//   - Short(s) is s when s has at most 64 bytes, else a prefix of s of at
//     most 64 bytes followed by "…", cut on a character boundary (so valid
//     UTF-8 and at least 61 bytes of s when s is valid UTF-8).
func FuzzNames(f *testing.F) {
	for _, s := range []string{
		"", "orders", "a\x00b", "\x00", "\xff", "\xc3", "a\xffb",
		"\xed\xa0\x80",     // a surrogate, U+D800
		"\xf4\x90\x80\x80", // above U+10FFFF
		"\xc0\x80",         // overlong NUL
		"\xe0\x80\xaf",     // overlong '/'
		"\xef\xbf\xbd",     // U+FFFD itself is fine
		strings.Repeat("t", 250), strings.Repeat("t", 251),
		strings.Repeat("é", 125),       // 250 bytes
		strings.Repeat("é", 125) + "x", // 251 bytes
		strings.Repeat("x", 249) + "é", // 251 bytes, the last character across the limit
		strings.Repeat("x", 248) + "€", // 251 bytes, a 3-byte character across the limit
		strings.Repeat("🚀", 125),       // 500 bytes
		strings.Repeat("x", 499) + "🚀", // 503 bytes
		strings.Repeat("i", 500), strings.Repeat("i", 501),
		strings.Repeat("\xff", 300),
		strings.Repeat("\x80", 70), // only continuation bytes: Short cuts to nothing
		"line\nbreak\ttab\r\x1b[31mred",
	} {
		f.Add(s)
	}
	type rule struct {
		name     string
		limit    int
		optional bool
		check    func(string) error
	}
	rules := []rule{
		{"Topic", docTopicLimit, false, check.Topic},
		{"Owner", docOwnerLimit, false, check.Owner},
		{"Identifier", docIdentifierLimit, false, check.Identifier},
		{"Schedule", docIdentifierLimit, false, check.Schedule},
		{"Reference", docReferenceLimit, true, check.Reference},
		{"Text", math.MaxInt, true, func(s string) error { return check.Text("input", s) }},
	}
	f.Fuzz(func(t *testing.T, s string) {
		if wellFormed(s) != utf8.ValidString(s) { // the oracle against the standard library
			t.Fatalf("the oracle and unicode/utf8 disagree on %q", s)
		}
		for _, r := range rules {
			vs := []string{s}
			if r.limit < math.MaxInt { // a text has no limit to test at
				vs = variants(s, r.limit)
			}
			for _, v := range vs {
				if err, ok := r.check(v), nameOK(v, r.limit, r.optional); (err == nil) != ok {
					wantVerdict(t, r.name+" "+quoted(v), err, ok)
				} else if err != nil {
					wantVerdict(t, r.name, err, ok)
				}
			}
		}
		for _, v := range variants(s, 64) {
			checkShort(t, v)
		}
	})
}

// quoted shows s in a failure message, at most 80 bytes of it, and its
// length.
func quoted(s string) string { return fmt.Sprintf("%.80q (%d bytes)", s, len(s)) }

// checkShort checks the properties of Short for s.
func checkShort(t *testing.T, s string) {
	t.Helper()
	got := check.Short(s)
	if len(s) <= 64 {
		if got != s {
			t.Fatalf("Short(%q) = %q, want it unchanged", s, got)
		}
		return
	}
	prefix, cut := strings.CutSuffix(got, "…")
	if !cut || !strings.HasPrefix(s, prefix) || len(prefix) > 64 {
		t.Fatalf("Short(%.80q) = %q, want at most 64 bytes of it and …", s, got)
	}
	if textOK(s) && (!utf8.ValidString(got) || len(prefix) < 61) {
		t.Fatalf("Short(%.80q) = %q, want a valid prefix of 61 to 64 bytes", s, got)
	}
}

// FuzzCreation checks Creation, NotBefore, Defer and Push against the
// rules.
//
// Properties, for any creation (identifier, input, reference, suspended,
// not-before time in any zone) and any topic and insertion:
//   - nothing panics;
//   - Creation accepts it exactly when the identifier is a valid name of at
//     most 500 bytes, the reference is empty or one, the input is valid
//     UTF-8 without NUL, and the not-before time is zero or lies in the
//     years 1000 to 9999 in UTC (whatever its zone);
//   - NotBefore and Defer accept exactly the times that rule allows (Defer
//     with a valid topic only);
//   - Push accepts exactly a valid topic, an insertion of 0 to 3 (APPEND to
//     DELETE), and creations that are each valid, no creations included;
//   - every error wraps ErrInvalidArgument with a short printable message.
func FuzzCreation(f *testing.F) {
	type seed struct {
		id, input, ref string
		suspended      bool
		deferred       bool
		sec, nsec      int64
		zone           int
		topic          string
		insertion      int
	}
	y1000 := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	y10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []seed{
		{"id", `{"n":1}`, "ref", false, false, 0, 0, 0, "orders", 0},
		{"", "", "", false, false, 0, 0, 0, "orders", 0},
		{strings.Repeat("i", 500), "", strings.Repeat("r", 500), true, false, 0, 0, 0, strings.Repeat("t", 250), 3},
		{strings.Repeat("i", 501), "", "", false, false, 0, 0, 0, "t", 1},
		{"id", "nul\x00", "", false, false, 0, 0, 0, "t", 2},
		{"id", "\xff", "\xc3", false, false, 0, 0, 0, "t", 2},
		{"id", "", "", false, true, y1000.Unix(), 0, 0, "t", 0},                          // the first storable instant
		{"id", "", "", false, true, y1000.Unix(), -1, 0, "t", 0},                         // a nanosecond before it
		{"id", "", "", false, true, y10000.Unix(), -1, 0, "t", 0},                        // the last storable instant
		{"id", "", "", false, true, y10000.Unix(), 0, 0, "t", 0},                         // the year 10000
		{"id", "", "", false, true, y1000.Unix(), 0, -3600, "t", 0},                      // year 999 at its place, 1000 in UTC
		{"id", "", "", false, true, y10000.Unix() - 1, 0, 14 * 3600, "t", 0},             // year 10000 at its place, 9999 in UTC
		{"id", "", "", false, true, -62135596800, 0, 0, "t", 0},                          // the zero instant, given as a time
		{"id", "", "", false, true, math.MaxInt64, math.MaxInt64, math.MaxInt32, "t", 0}, // beyond what time.Time holds
		{"id", "", "", false, true, math.MinInt64, math.MinInt64, math.MinInt32, "t", 0},
		{"id", "", "", false, true, 0, 0, 0, "", 4},
		{"id", "", "", false, false, 0, 0, 0, "t", -1},
	} {
		f.Add(s.id, s.input, s.ref, s.suspended, s.deferred, s.sec, s.nsec, s.zone, s.topic, s.insertion)
	}
	f.Fuzz(func(t *testing.T, id, input, ref string, suspended, deferred bool, sec, nsec int64, zone int, topic string, insertion int) {
		var notBefore time.Time
		if deferred {
			notBefore = time.Unix(sec, nsec).In(time.FixedZone("fuzz", zone))
		}
		c := taskapi.Creation{Identifier: id, Input: input, Reference: ref, Suspended: suspended, NotBefore: notBefore}
		creationOK := nameOK(id, docIdentifierLimit, false) && nameOK(ref, docReferenceLimit, true) &&
			textOK(input) && timeOK(notBefore)
		wantVerdict(t, "Creation", check.Creation(c), creationOK)
		wantVerdict(t, "NotBefore", check.NotBefore(notBefore), timeOK(notBefore))
		topicOK := nameOK(topic, docTopicLimit, false)
		wantVerdict(t, "Defer", verdict(check.Defer(topic, notBefore, nil)), topicOK && timeOK(notBefore))
		callOK := topicOK && insertion >= 0 && insertion <= 3
		ins := taskapi.Insertion(insertion)
		wantVerdict(t, "Push of none", verdict(check.Push(topic, ins, nil)), callOK)
		good := taskapi.Creation{Identifier: "good"}
		wantVerdict(t, "Push", verdict(check.Push(topic, ins, []taskapi.Creation{good, c, good})), callOK && creationOK)
	})
}

// FuzzAdvance checks Mark and Advance, the schedule checks, against the
// rules.
//
// Properties, for any topic, schedule name and two marks from and to (each
// possibly zero, in any zone):
//   - nothing panics;
//   - Mark accepts exactly a valid topic and a schedule name valid as an
//     identifier (non-empty, at most 500 bytes, valid UTF-8, no NUL);
//   - Advance accepts exactly what Mark accepts, with from zero or in the
//     years 1000 to 9999 (UTC), to non-zero and in those years, and to later
//     than from once both are cut to the microsecond (as they are stored);
//   - every error wraps ErrInvalidArgument with a short printable message.
func FuzzAdvance(f *testing.F) {
	at := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC).Unix()
	y1000 := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	y10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	f.Add("t", "s", true, int64(0), int64(0), false, at, int64(0), 0)
	f.Add("t", "s", false, at, int64(0), false, at, int64(1000), 3600)     // a microsecond later
	f.Add("t", "s", false, at, int64(100), false, at, int64(900), 0)       // within one microsecond
	f.Add("t", "s", false, at, int64(999), false, at, int64(1000), -7200)  // across a microsecond's edge
	f.Add("t", "s", false, at, int64(0), false, at-1, int64(999999999), 0) // earlier
	f.Add("t", "s", false, at, int64(0), true, int64(0), int64(0), 0)      // to zero
	f.Add("t", "s", true, int64(0), int64(0), false, y1000, int64(0), 0)   // the first storable instant
	f.Add("t", "s", true, int64(0), int64(0), false, y1000, int64(-1), 0)  // year 999
	f.Add("t", "s", false, y1000, int64(0), false, y10000, int64(-1), 0)   // the whole span
	f.Add("t", "s", false, y1000, int64(0), false, y10000, int64(0), 0)    // year 10000
	f.Add("", "s", true, int64(0), int64(0), false, at, int64(0), 0)
	f.Add("t", strings.Repeat("n", 501), true, int64(0), int64(0), false, at, int64(0), 0)
	f.Add("t", "a\x00b", true, int64(0), int64(0), false, at, int64(0), 0)
	f.Add("t", "s", false, int64(math.MinInt64), int64(0), false, int64(math.MaxInt64), int64(math.MaxInt64), math.MaxInt32)
	f.Fuzz(func(t *testing.T, topic, name string, fromZero bool, fromSec, fromNsec int64, toZero bool, toSec, toNsec int64, zone int) {
		loc := time.FixedZone("fuzz", zone)
		var from, to time.Time
		if !fromZero {
			from = time.Unix(fromSec, fromNsec).In(loc)
		}
		if !toZero {
			to = time.Unix(toSec, toNsec)
		}
		markOK := nameOK(topic, docTopicLimit, false) && nameOK(name, docIdentifierLimit, false)
		wantVerdict(t, "Mark", check.Mark(topic, name), markOK)
		ok := markOK && timeOK(from) && !to.Equal(time.Time{}) && inYears(to) &&
			(from.Equal(time.Time{}) || micros(to) > micros(from))
		wantVerdict(t, "Advance", check.Advance(topic, name, from, to), ok)
	})
}

// micros returns the microseconds of t since 1970, rounded down: the mark
// that is stored. t lies within the years 1000 to 9999, where it does not
// overflow.
func micros(t time.Time) int64 { return t.Unix()*1_000_000 + int64(t.Nanosecond()/1000) }

// The documented ordinals of the enums, first and last.
type span struct{ lo, hi int }

var (
	states          = span{0, 9} // ACTIVE to CANCELLED
	revivableStates = span{2, 6} // EXPIRED to SUCCEEDED
	results         = span{0, 3} // FAILURE to SUCCESS
	insertions      = span{0, 3} // APPEND to DELETE
	orders          = span{0, 1} // FIFO, LIFO
	conditions      = span{0, 3} // UNCONDITIONAL to SINGULAR_BY_IDENTIFIER_SUSPEND_UNTIL_SUCCESS
	revivifications = span{0, 3} // REVIVE_APPEND to REVIVE_RESET
	junctions       = span{0, 1} // SINGULAR, ETERNAL
	directions      = span{0, 1} // FORWARD, BACKWARD
	snapshots       = span{0, 1} // TOTAL, RECENT
	activations     = span{0, 2} // RUNNING, PAUSED, DRAINING
)

func (s span) has(v int) bool { return v >= s.lo && v <= s.hi }

// FuzzEnums checks the enum, duration and whole-call checks that take enums
// against their documented ordinals.
//
// Properties, for any two integers v and w, any duration d and any topic:
//   - nothing panics, String included for an undefined value;
//   - Enum accepts exactly the documented ordinals of each enum (State 0–9,
//     Result 0–3, Insertion 0–3, Order 0–1, Condition 0–3,
//     Revivification 0–3, Junction 0–1, Direction 0–1, Snapshot 0–1,
//     Activation 0–2), and States and Revivable the states allowed (any
//     defined, or Expired to Succeeded);
//   - Duration accepts exactly d >= 0; Lease a valid topic and d of at
//     least a millisecond;
//   - Revive, ReviveTasks, ReassignAll, Page, Count and Activation accept
//     exactly the combination of valid arguments (Count: an empty topic
//     filters nothing and is fine);
//   - every error wraps ErrInvalidArgument with a short printable message.
func FuzzEnums(f *testing.F) {
	for _, s := range []struct {
		v, w  int
		d     int64
		topic string
	}{
		{0, 0, 0, "t"}, {-1, 9, -1, "t"}, {8, 3, 1, ""}, {9, 4, int64(time.Millisecond), "t"},
		{2, 6, int64(time.Millisecond) - 1, "t"}, {6, 2, math.MaxInt64, "t"}, {1, 1, math.MinInt64, "t\x00"},
		{math.MaxInt, math.MinInt, 0, strings.Repeat("t", 251)}, {math.MinInt, math.MaxInt, 0, "t"},
		{math.MaxInt32 + 1, -math.MaxInt32 - 2, 0, "t"},
	} {
		f.Add(s.v, s.w, s.d, s.topic)
	}
	f.Fuzz(func(t *testing.T, v, w int, d int64, topic string) {
		for _, e := range []struct {
			name  string
			check error
			span  span
		}{
			{"State", check.Enum(taskapi.State(v)), states},
			{"Result", check.Enum(taskapi.Result(v)), results},
			{"Insertion", check.Enum(taskapi.Insertion(v)), insertions},
			{"Order", check.Enum(taskapi.Order(v)), orders},
			{"Condition", check.Enum(taskapi.Condition(v)), conditions},
			{"Revivification", check.Enum(taskapi.Revivification(v)), revivifications},
			{"Junction", check.Enum(taskapi.Junction(v)), junctions},
			{"Direction", check.Enum(taskapi.Direction(v)), directions},
			{"Snapshot", check.Enum(taskapi.Snapshot(v)), snapshots},
			{"Activation", check.Enum(taskapi.Activation(v)), activations},
			{"States", check.States([]taskapi.State{taskapi.Ready, taskapi.State(v)}, nil), states},
			{"Revivable", check.Revivable(taskapi.State(v)), revivableStates},
		} {
			wantVerdict(t, e.name, e.check, e.span.has(v))
		}
		topicOK := nameOK(topic, docTopicLimit, false)
		dur := time.Duration(d)
		wantVerdict(t, "Duration", check.Duration("after", dur), d >= 0)
		wantVerdict(t, "Lease", check.Lease(topic, dur), topicOK && dur >= time.Millisecond)
		wantVerdict(t, "Activation call", check.Activation(topic, taskapi.Activation(v)), topicOK && activations.has(v))
		wantVerdict(t, "ReviveTasks", verdict(check.ReviveTasks(topic, taskapi.Revivification(v), nil)), topicOK && revivifications.has(v))
		wantVerdict(t, "Revive", verdict(check.Revive(topic, taskapi.Revivification(v), taskapi.State(w), taskapi.Unbounded, 1)),
			topicOK && revivifications.has(v) && revivableStates.has(w))
		wantVerdict(t, "ReassignAll", verdict(check.ReassignAll(topic, taskapi.State(v), taskapi.Result(w), taskapi.Unbounded)),
			topicOK && revivableStates.has(v) && results.has(w))
		wantVerdict(t, "Page", verdict(check.Page(topic, taskapi.Listing{States: []taskapi.State{taskapi.State(v)}}, 1, 10, taskapi.Direction(w))),
			topicOK && states.has(v) && directions.has(w))
		wantVerdict(t, "Count", check.Count(taskapi.Snapshot(v), taskapi.Counting{Topic: topic, States: []taskapi.State{taskapi.State(w)}}),
			snapshots.has(v) && (topic == "" || topicOK) && states.has(w))
	})
}

// pollOption decodes one byte into a poll option: its two low bits choose
// an Order, a Condition, a nil option, AwaitRevival (the highest value) or
// a Term (an even value), or an extreme value of either; the other bits a
// value from -2 to 5, about half of them defined. A Term is of topic "t"
// and owner "o", numbered by the value; its owner is "p" for the highest
// even value.
func pollOption(b byte) taskapi.PollOption {
	v := int(b>>2)%8 - 2
	switch b & 3 {
	case 0:
		return taskapi.Order(v)
	case 1:
		return taskapi.Condition(v)
	case 2:
		if v == 5 {
			return taskapi.AwaitRevival{}
		}
		if v%2 != 0 {
			return nil
		}
		owner := "o"
		if v == 4 {
			owner = "p"
		}
		return taskapi.Term{Topic: "t", Owner: owner, Number: int64(v)}
	}
	if v%2 == 0 {
		return taskapi.Order(math.MaxInt - v)
	}
	return taskapi.Condition(math.MinInt + v)
}

// FuzzPollOptions checks Poll against the documented rules of Poll's
// options.
//
// Properties, for any list of options (Orders and Conditions of any value,
// AwaitRevival, Terms of any number, nil options) and any topic:
//   - nothing panics;
//   - the options are valid exactly when every option is a
//     defined Order (FIFO, LIFO), Condition (0 to 3), AwaitRevival or Term
//     numbered 1 or more, and all the Orders are equal, and all the
//     Conditions are equal (an option given twice alike is fine; FIFO with
//     LIFO, or two conditions, contradict), and there is one Term at most;
//   - Poll accepts exactly a valid topic with such options, a Term of that
//     topic and of its owner among them, and resolves the Order given,
//     else FIFO, the Condition given, else Unconditional, whether
//     AwaitRevival was given, and the Term;
//   - every error wraps ErrInvalidArgument with a short printable message.
func FuzzPollOptions(f *testing.F) {
	enc := func(opts ...taskapi.PollOption) []byte {
		var data []byte
		for _, o := range opts {
			switch o := o.(type) {
			case taskapi.Order:
				data = append(data, byte((int(o)+2)<<2))
			case taskapi.Condition:
				data = append(data, byte((int(o)+2)<<2|1))
			case taskapi.Term:
				data = append(data, byte((int(o.Number)+2)<<2|2))
			case taskapi.AwaitRevival:
				data = append(data, (5+2)<<2|2)
			default:
				data = append(data, 2)
			}
		}
		return data
	}
	f.Add("t", enc())
	f.Add("t", enc(taskapi.LIFO, taskapi.SingularByIdentifier))
	f.Add("t", enc(taskapi.LIFO, taskapi.SingularByIdentifier, taskapi.LIFO, taskapi.SingularByIdentifier))
	f.Add("t", enc(taskapi.FIFO, taskapi.LIFO))
	f.Add("t", enc(taskapi.Unconditional, taskapi.SingularByIdentifier))
	f.Add("t", enc(taskapi.Order(2), taskapi.Condition(-1)))
	f.Add("t", enc(nil))
	f.Add("t", enc(taskapi.Term{Topic: "t", Owner: "o", Number: 2}, taskapi.LIFO))
	f.Add("t", enc(taskapi.Term{Number: 2}, taskapi.Term{Number: 2}))
	f.Add("t", enc(taskapi.Term{Number: 0}))
	f.Add("t", enc(taskapi.AwaitRevival{}, taskapi.SingularByIdentifier, taskapi.AwaitRevival{}))
	f.Add("u", enc(taskapi.Term{Number: 2}))
	f.Add("t", []byte{3, 7})
	f.Add("", enc(taskapi.FIFO))
	f.Fuzz(func(t *testing.T, topic string, data []byte) {
		opts := make([]taskapi.PollOption, len(data))
		for i, b := range data {
			opts[i] = pollOption(b)
		}
		wantOrder, wantCondition, ok := taskapi.FIFO, taskapi.Unconditional, true
		var (
			ordered, conditioned, await bool
			term                        *taskapi.Term
		)
		for _, o := range opts {
			switch o := o.(type) {
			case taskapi.Order:
				ok = ok && orders.has(int(o)) && (!ordered || o == wantOrder)
				wantOrder, ordered = o, true
			case taskapi.Condition:
				ok = ok && conditions.has(int(o)) && (!conditioned || o == wantCondition)
				wantCondition, conditioned = o, true
			case taskapi.AwaitRevival:
				await = true
			case taskapi.Term:
				ok = ok && term == nil && o.Number >= 1
				term = &o
			default:
				ok = false
			}
		}
		topicOK := nameOK(topic, docTopicLimit, false) && (term == nil || term.Topic == topic)
		ownerOK := term == nil || term.Owner == "o"
		p, _, err := check.Poll("o", topic, 1, opts)
		wantVerdict(t, "Poll", err, ok && topicOK && ownerOK)
		if ok && topicOK && ownerOK && (p.Order != wantOrder || p.Condition != wantCondition || p.AwaitRevival != await ||
			(p.Term == nil) != (term == nil) || term != nil && *p.Term != *term) {
			t.Fatalf("Poll(%v) = %+v; want %v, %v, AwaitRevival %v, %v", opts, p, wantOrder, wantCondition, await, term)
		}
	})
}

// FuzzBatchArguments checks the checks of calls that take many things at
// once: Completions, Assignments, Join and Filter.
//
// Properties, for any topic, text and bytes that pick results, states,
// outputs and identifiers (pieces of text, some cut in the middle of a
// character):
//   - nothing panics;
//   - Completions accepts exactly a valid topic with every result defined
//     (0 to 3) and every output valid UTF-8 without NUL (empty included);
//   - Assignments accepts exactly a valid topic with every result defined
//     and every output valid UTF-8 without NUL (empty included);
//   - Join accepts exactly a valid topic, a defined junction and every
//     identifier of every group valid (empty groups are fine);
//   - Filter accepts exactly defined states, an empty or valid reference
//     and an empty or valid identifier;
//   - every error wraps ErrInvalidArgument with a short printable message.
func FuzzBatchArguments(f *testing.F) {
	f.Add("t", "output", []byte{0x0f, 0x1e, 0x2d})
	f.Add("t", "", []byte{})
	f.Add("t", "a,b,,c", []byte{0x02, 0x23})
	f.Add("t", "é,ü", []byte{0x13, 0x33}) // pieces cut inside a character
	f.Add("t", "nul\x00", []byte{0x0a})
	f.Add("t", "\xff", []byte{0x1c})
	f.Add("", "x", []byte{0x03})
	f.Add("t", strings.Repeat("i", 501), []byte{0x03, 0x43})
	f.Add("t", strings.Repeat("é", 251), []byte{0x05, 0x25, 0x45})
	f.Fuzz(func(t *testing.T, topic, text string, data []byte) {
		topicOK := nameOK(topic, docTopicLimit, false)
		// piece returns a piece of text chosen by b: none, all of it, its
		// first half, or a field of it split at commas.
		piece := func(b byte) string {
			switch b >> 5 & 3 {
			case 0:
				return ""
			case 1:
				return text
			case 2:
				return text[:len(text)/2]
			}
			fields := strings.Split(text, ",")
			return fields[int(b)%len(fields)]
		}
		var (
			completions                  []taskapi.Completion
			assignments                  []taskapi.Assignment
			groups                       [][]string
			filterStates                 []taskapi.State
			completionsOK, assignmentsOK = topicOK, topicOK
			statesOK, groupsOK           = true, true
		)
		group := []string{}
		for i, b := range data {
			result := int(b&7) - 2 // -2 to 5
			output := piece(b)
			completions = append(completions, taskapi.Completion{
				Task:     taskapi.Task{Sequence: int64(i)},
				Decision: taskapi.Decision{Result: taskapi.Result(result), Output: output},
			})
			assignments = append(assignments, taskapi.Assignment{Task: taskapi.Task{Sequence: int64(i)}, Result: taskapi.Result(result), Output: output})
			completionsOK = completionsOK && results.has(result) && textOK(output)
			assignmentsOK = assignmentsOK && results.has(result) && textOK(output)
			state := int(b&15) - 3 // -3 to 12
			filterStates = append(filterStates, taskapi.State(state))
			statesOK = statesOK && states.has(state)
			group = append(group, output)
			groupsOK = groupsOK && nameOK(output, docIdentifierLimit, false)
			if b&8 != 0 {
				groups, group = append(groups, group), []string{}
			}
		}
		groups = append(groups, group)
		wantVerdict(t, "Completions", verdict(check.Completions(topic, completions)), completionsOK)
		wantVerdict(t, "Assignments", verdict(check.Assignments(topic, assignments)), assignmentsOK)
		junction := len(data) % 3 // 2 is undefined
		wantVerdict(t, "Join", check.Join(topic, taskapi.Junction(junction), groups),
			topicOK && junctions.has(junction) && groupsOK)
		reference, identifier := text, text[len(text)/2:]
		wantVerdict(t, "Filter", check.Filter(filterStates, reference, identifier),
			statesOK && nameOK(reference, docReferenceLimit, true) && nameOK(identifier, docIdentifierLimit, true))
	})
}
