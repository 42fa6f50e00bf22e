package taskapi_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/taskapi"
)

// severity ranks the results as the documentation orders them, FAILURE >
// SUSPENSION > FILTER > SUCCESS, without relying on their ordinals.
var severity = map[taskapi.Result]int{
	taskapi.Failure:    4,
	taskapi.Suspension: 3,
	taskapi.Filter:     2,
	taskapi.Success:    1,
}

// leadsTo is the state a task is left in when completed with a result, as
// documented.
var leadsTo = map[taskapi.Result]taskapi.State{
	taskapi.Failure:    taskapi.Failed,
	taskapi.Suspension: taskapi.Suspended,
	taskapi.Filter:     taskapi.Filtered,
	taskapi.Success:    taskapi.Succeeded,
}

// FuzzResultMerge checks Result.Merge, the merge of results that every
// decision merge builds on.
//
// Properties, for any three results a, b and c of any value (defined or
// not):
//   - Merge never panics, and it is commutative (a.Merge(b) ==
//     b.Merge(a)), associative and idempotent (a.Merge(a) == a), and it
//     returns one of its two arguments;
//
// and for defined results:
//   - the merge is the more severe of the two by the documented order
//     FAILURE > SUSPENSION > FILTER > SUCCESS, so merging is taking the
//     worst, SUCCESS is its identity and FAILURE absorbs everything;
//   - the merge is defined, and the state it leads to (State) is the one
//     documented for it, whose Result is the merge again.
func FuzzResultMerge(f *testing.F) {
	f.Add(0, 1, 2)
	f.Add(3, 3, 3)
	f.Add(3, 0, 2)
	f.Add(2, 1, 3)
	f.Add(-1, 4, 0)
	f.Add(int(^uint(0)>>1), -int(^uint(0)>>1)-1, 3)
	f.Fuzz(func(t *testing.T, x, y, z int) {
		a, b, c := taskapi.Result(x), taskapi.Result(y), taskapi.Result(z)
		ab := a.Merge(b)
		if ab != b.Merge(a) {
			t.Fatalf("%v.Merge(%v) = %v but %v.Merge(%v) = %v", a, b, ab, b, a, b.Merge(a))
		}
		if ab.Merge(c) != a.Merge(b.Merge(c)) {
			t.Fatalf("(%v merge %v) merge %v = %v, but %v merge (%v merge %v) = %v", a, b, c, ab.Merge(c), a, b, c, a.Merge(b.Merge(c)))
		}
		if a.Merge(a) != a || ab != a && ab != b {
			t.Fatalf("%v.Merge(%v) = %v, %v.Merge(itself) = %v", a, b, ab, a, a.Merge(a))
		}
		_ = ab.String() // never panics, defined or not
		for _, r := range []taskapi.Result{a, b, c} {
			r = taskapi.Result(int(uint(r) % 4)) // a defined result
			for _, other := range []taskapi.Result{taskapi.Failure, taskapi.Suspension, taskapi.Filter, taskapi.Success} {
				merged := r.Merge(other)
				want := r
				if severity[other] > severity[r] {
					want = other
				}
				if merged != want || !merged.Valid() {
					t.Fatalf("%v.Merge(%v) = %v, want the more severe, %v", r, other, merged, want)
				}
				state := merged.State()
				if back, ok := state.Result(); state != leadsTo[merged] || !ok || back != merged || !state.Completed() {
					t.Fatalf("%v leads to %v (result %v, %v), want %v", merged, state, back, ok, leadsTo[merged])
				}
			}
			if r.Merge(taskapi.Success) != r || r.Merge(taskapi.Failure) != taskapi.Failure {
				t.Fatalf("SUCCESS is not the identity of %v, or FAILURE does not absorb it", r)
			}
		}
	})
}

// foldASCII upper-cases the ASCII letters of s and drops its underscores:
// the documented match of enum names, which are ASCII, "ignores case and
// underscores".
func foldASCII(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_':
		case c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// enumParser is a Parse function and the documented names of its enum, in
// ordinal order.
type enumParser struct {
	kind  string
	parse func(string) (int, string, bool, error) // ordinal, String, Valid, error
	names []string
}

func parser[E interface {
	~int
	String() string
	Valid() bool
}](kind string, parse func(string) (E, error), names ...string) enumParser {
	return enumParser{kind, func(s string) (int, string, bool, error) {
		e, err := parse(s)
		return int(e), e.String(), e.Valid(), err
	}, names}
}

var enumParsers = []enumParser{
	parser("State", taskapi.ParseState, "ACTIVE", "READY", "EXPIRED", "FAILED", "SUSPENDED", "FILTERED", "SUCCEEDED", "RECREATED", "REDUNDANT", "CANCELLED"),
	parser("Result", taskapi.ParseResult, "FAILURE", "SUSPENSION", "FILTER", "SUCCESS"),
	parser("Insertion", taskapi.ParseInsertion, "APPEND", "SUPERSEDE", "REPLACE", "DELETE"),
	parser("Order", taskapi.ParseOrder, "FIFO", "LIFO"),
	parser("Condition", taskapi.ParseCondition, "UNCONDITIONAL", "SINGULAR_BY_IDENTIFIER",
		"SINGULAR_BY_IDENTIFIER_SUSPEND_ON_FAILURE", "SINGULAR_BY_IDENTIFIER_SUSPEND_UNTIL_SUCCESS"),
	parser("Revivification", taskapi.ParseRevivification, "REVIVE_APPEND", "REVIVE_SUPERSEDE", "REVIVE_REPLACE", "REVIVE_RESET"),
	parser("Junction", taskapi.ParseJunction, "SINGULAR", "ETERNAL"),
	parser("Direction", taskapi.ParseDirection, "FORWARD", "BACKWARD"),
	parser("Snapshot", taskapi.ParseSnapshot, "TOTAL", "RECENT"),
	parser("Activation", taskapi.ParseActivation, "RUNNING", "PAUSED", "DRAINING"),
}

// FuzzParseEnums checks the enum parsers, which read operators' and
// configuration files' input, against their documentation.
//
// Properties, for any string s and every Parse function:
//   - it never panics;
//   - it accepts s exactly when s, with its ASCII letters upper-cased and
//     its underscores dropped, is one of the documented names so
//     normalised (for Revivification, also when "REVIVE_"+s is): the match
//     ignores case and underscores, and nothing else, so no other
//     character stands in for an ASCII letter;
//   - what it accepts is a defined value whose String is that name;
//   - an error wraps ErrInvalidArgument, and its message repeats at most
//     64 bytes of s, as valid UTF-8: a huge or malformed argument stays
//     out of logs.
func FuzzParseEnums(f *testing.F) {
	for _, s := range []string{
		"READY", "ready", "Ready", "re_ady", "_READY_", "", "_", "__", "READY ", " READY",
		"SingularByIdentifier", "singular_by_identifier_suspend_on_failure",
		"reset", "REVIVE_RESET", "revive_reset", "REVIVE_", "REVIVE_REVIVE_RESET",
		"FIFO\x00", "LIF\xffO", "\xff\xfe", "ＲＥＡＤＹ", // full-width letters
		"lıfo", "ſuccess", "\u212Aeep", // letters that strings.ToUpper or case folding turn into ASCII ones
		"paused", "Draining", "total", "recent", "backward",
		strings.Repeat("x", 65), strings.Repeat("é", 40), strings.Repeat("\xff", 100),
		strings.Repeat("_", 1000) + "READY",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range enumParsers {
			want := -1
			for i, name := range p.names {
				if foldASCII(s) != "" && foldASCII(s) == foldASCII(name) ||
					p.kind == "Revivification" && foldASCII("REVIVE_"+s) == foldASCII(name) {
					want = i
				}
			}
			got, name, valid, err := p.parse(s)
			switch {
			case want < 0 && err == nil:
				t.Fatalf("Parse%s(%q) = %s, want an error", p.kind, s, name)
			case want >= 0 && err != nil:
				t.Fatalf("Parse%s(%q): %v, want %s", p.kind, s, err, p.names[want])
			case err == nil && (got != want || !valid || name != p.names[want]):
				t.Fatalf("Parse%s(%q) = %d, %s, valid %v; want %d, %s", p.kind, s, got, name, valid, want, p.names[want])
			case err != nil:
				msg := err.Error()
				if !errors.Is(err, taskapi.ErrInvalidArgument) || !utf8.ValidString(msg) || len(msg) > 64*4+100 {
					t.Fatalf("Parse%s(%.80q): a %d-byte error %.300q, want a short ErrInvalidArgument", p.kind, s, len(msg), msg)
				}
			}
		}
	})
}
