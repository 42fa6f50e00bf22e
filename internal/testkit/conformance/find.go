package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testFind checks taskapi.Finder: the tasks of one topic whose identifier
// and reference begin with the given prefixes, newest first below a
// cursor, matched byte for byte (case, LIKE's wildcards and the escape
// character taken literally); no prefix, or an invalid one, is
// ErrInvalidArgument; an unregistered topic gives nothing. Every backend's
// repository implements it.
func testFind[Tx any](t *testing.T, b Backend[Tx]) {
	const ta, tb = "alpha", "beta"
	all := map[string]func(t *testing.T){}

	// push pushes one task per identifier with the reference "ref-" + it,
	// and returns their sequences.
	push := func(w *world[Tx], topic string, ids ...string) map[string]int64 {
		seqs := map[string]int64{}
		for _, id := range ids {
			seqs[id] = w.push(topic, taskapi.Append, taskapi.Creation{Identifier: id, Reference: "ref-" + id})[0].Sequence
		}
		return seqs
	}
	find := func(w *world[Tx], topic string, s taskapi.Search, cursor int64, size int) []int64 {
		w.t.Helper()
		infos, err := extension[taskapi.Finder[Tx]](w.t, w.repo).Find(w.ctx, w.db, topic, s, cursor, size)
		w.must(err, "Find(%q, %+v, %d, %d)", topic, s, cursor, size)
		return infoSequences(infos)
	}

	all["PrefixesNewestFirst"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta, tb))
		s := push(w, ta, "order-1", "Order-2", "order-3", "orders", "other", "order-4")
		push(w, tb, "order-9")
		wantSeqs(t, "identifier order-", find(w, ta, taskapi.Search{Identifier: "order-"}, taskapi.MaxSequence, 10),
			[]int64{s["order-4"], s["order-3"], s["order-1"]})
		wantSeqs(t, "identifier order", find(w, ta, taskapi.Search{Identifier: "order"}, taskapi.MaxSequence, 10),
			[]int64{s["order-4"], s["orders"], s["order-3"], s["order-1"]})
		wantSeqs(t, "reference ref-o", find(w, ta, taskapi.Search{Reference: "ref-o"}, taskapi.MaxSequence, 10),
			[]int64{s["order-4"], s["other"], s["orders"], s["order-3"], s["order-1"]})
		wantSeqs(t, "both", find(w, ta, taskapi.Search{Identifier: "ord", Reference: "ref-order-"}, taskapi.MaxSequence, 10),
			[]int64{s["order-4"], s["order-3"], s["order-1"]})
		wantSeqs(t, "below a cursor, two", find(w, ta, taskapi.Search{Identifier: "order"}, s["order-4"], 2),
			[]int64{s["orders"], s["order-3"]})
		wantSeqs(t, "whole identifier", find(w, ta, taskapi.Search{Identifier: "Order-2"}, taskapi.MaxSequence, 10),
			[]int64{s["Order-2"]})
	}

	all["WildcardsAreLiteral"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		s := push(w, ta, "a_b", "axb", "a%b", "ayyb", "a!b", `a\b`, "A_B")
		for prefix, want := range map[string][]int64{
			"a_":  {s["a_b"]},
			"a%":  {s["a%b"]},
			"a!":  {s["a!b"]},
			`a\`:  {s[`a\b`]},
			"a":   {s[`a\b`], s["a!b"], s["ayyb"], s["a%b"], s["axb"], s["a_b"]},
			"%":   nil,
			"_":   nil,
			"A_B": {s["A_B"]},
		} {
			wantSeqs(t, "identifier "+prefix, find(w, ta, taskapi.Search{Identifier: prefix}, taskapi.MaxSequence, 10), want)
		}
	}

	all["MultibyteAndNoReference"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		s := push(w, ta, "zürich-1", "zürich-2", "zurich-3")
		bare := w.pushIDs(ta, "zürich-4")[0].Sequence
		wantSeqs(t, "identifier zür", find(w, ta, taskapi.Search{Identifier: "zür"}, taskapi.MaxSequence, 10),
			[]int64{bare, s["zürich-2"], s["zürich-1"]})
		wantSeqs(t, "reference ref-zür", find(w, ta, taskapi.Search{Reference: "ref-zür"}, taskapi.MaxSequence, 10),
			[]int64{s["zürich-2"], s["zürich-1"]})
	}

	all["EdgesOfThePrefix"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		s := push(w, ta, "a-", "a-z", "a.", "a,", "a-\U0010FFFF", "a-\uE000x", "b", "a")
		wantSeqs(t, "identifier a-", find(w, ta, taskapi.Search{Identifier: "a-"}, taskapi.MaxSequence, 10),
			[]int64{s["a-\uE000x"], s["a-\U0010FFFF"], s["a-z"], s["a-"]})
		wantSeqs(t, "identifier a-\U0010FFFF", find(w, ta, taskapi.Search{Identifier: "a-\U0010FFFF"}, taskapi.MaxSequence, 10),
			[]int64{s["a-\U0010FFFF"]})
		wantSeqs(t, "reference ref-a.", find(w, ta, taskapi.Search{Reference: "ref-a."}, taskapi.MaxSequence, 10),
			[]int64{s["a."]})
	}

	all["NothingToFind"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		push(w, ta, "a1")
		wantSeqs(t, "unregistered topic", find(w, "nowhere", taskapi.Search{Identifier: "a"}, taskapi.MaxSequence, 10), nil)
		wantSeqs(t, "size 0", find(w, ta, taskapi.Search{Identifier: "a"}, taskapi.MaxSequence, 0), nil)
		wantSeqs(t, "cursor at Inception", find(w, ta, taskapi.Search{Identifier: "a"}, taskapi.Inception, 10), nil)
	}

	all["InvalidSearches"] = func(t *testing.T) {
		w := worldOf(setup(t, b, ta))
		for name, s := range map[string]taskapi.Search{
			"no prefix":         {},
			"NUL":               {Identifier: "a\x00"},
			"invalid UTF-8":     {Reference: "a\xff"},
			"too long":          {Identifier: strings.Repeat("x", taskapi.MaxIdentifierLength+1)},
			"too long anyway":   {Reference: strings.Repeat("x", taskapi.MaxReferenceLength+1)},
			"bad with good one": {Identifier: "ok", Reference: "\x00"},
		} {
			_, err := extension[taskapi.Finder[Tx]](t, w.repo).Find(w.ctx, w.db, ta, s, taskapi.MaxSequence, 10)
			if !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Find with %s = %v, want ErrInvalidArgument", name, err)
			}
		}
	}

	cases(t, all)
}
