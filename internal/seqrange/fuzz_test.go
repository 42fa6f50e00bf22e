package seqrange_test

import (
	"math"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

// sequencesOf decodes data into sequences: each byte is an offset from -128
// to 127 from base, wrapping around the ends of int64, so that a small
// window holds neighbours and duplicates, and a base near math.MaxInt64 or
// math.MinInt64 puts them at both ends at once.
func sequencesOf(base int64, data []byte) []int64 {
	seqs := make([]int64, len(data))
	for i, b := range data {
		seqs[i] = int64(uint64(base) + uint64(int64(int8(b))))
	}
	return seqs
}

// size returns how many sequences r holds, or false when it holds more than
// limit (or is inverted): the output cannot be expanded safely.
func size(r taskapi.Range, limit int) (int, bool) {
	if r.From > r.To || uint64(r.To)-uint64(r.From) >= uint64(limit) {
		return 0, false
	}
	return int(uint64(r.To)-uint64(r.From)) + 1, true
}

// checkRanges checks that ranges are what Ranges promises for the distinct
// sequences of want: ascending, neither overlapping nor adjacent (every
// range as long as it can be), and covering exactly want.
func checkRanges(t *testing.T, ranges []taskapi.Range, want map[int64]bool) {
	t.Helper()
	covered := 0
	for i, r := range ranges {
		n, ok := size(r, len(want))
		if !ok {
			t.Fatalf("range %d of %v is inverted or holds more sequences than the %d given", i, ranges, len(want))
		}
		covered += n
		for s := r.From; ; s++ { // r holds at most len(want) sequences
			if !want[s] {
				t.Fatalf("range %v of %v holds %d, which was not given", r, ranges, s)
			}
			if s == r.To {
				break
			}
		}
		if i > 0 {
			prev := ranges[i-1]
			if prev.To >= r.From || uint64(r.From)-uint64(prev.To) < 2 {
				t.Fatalf("ranges %v and %v of %v overlap, touch or are out of order", prev, r, ranges)
			}
		}
	}
	if covered != len(want) {
		t.Fatalf("%v covers %d sequences, want the %d given", ranges, covered, len(want))
	}
}

// expand returns the sequences of ranges, which checkRanges has bounded.
func expand(ranges []taskapi.Range) []int64 {
	var seqs []int64
	for _, r := range ranges {
		for s := r.From; ; s++ {
			seqs = append(seqs, s)
			if s == r.To {
				break
			}
		}
	}
	return seqs
}

// FuzzRanges checks Ranges against a brute-force oracle: the set of the
// sequences given.
//
// Properties, for any sequences (duplicates, negatives, Inception and
// neighbours of math.MinInt64 and math.MaxInt64 included):
//   - Ranges never panics;
//   - its ranges are ascending, From <= To, and neither overlap nor touch
//     (To+1 < next From): each is as long as it can be;
//   - together they hold exactly the distinct sequences given, no more;
//   - it is idempotent: Ranges of the sequences its ranges hold gives the
//     same ranges;
//   - it does not depend on the order of its input: the sequences given in
//     reverse, or rotated, give the same ranges.
func FuzzRanges(f *testing.F) {
	f.Add(int64(0), []byte{10, 3, 4, 4, 5, 1, 11, 12})
	f.Add(int64(0), []byte{})
	f.Add(int64(0), []byte{0, 0xff, 1}) // -1, 0 (Inception), 1
	f.Add(taskapi.Inception, []byte{1, 2, 3, 5, 6, 8})
	f.Add(int64(math.MaxInt64-2), []byte{0, 1, 2, 3, 4}) // past MaxSequence: wraps to math.MinInt64
	f.Add(int64(math.MaxInt64), []byte{0, 0xff, 0xfe, 0x80})
	f.Add(int64(math.MinInt64), []byte{0, 1, 0xff, 0x7f})
	f.Add(int64(1), []byte{5, 4, 3, 2, 1, 0, 0xff})
	f.Add(int64(1000), []byte{0x80, 0x7f, 0x81, 0x7e, 0, 1, 2})
	f.Fuzz(func(t *testing.T, base int64, data []byte) {
		seqs := sequencesOf(base, data)
		want := map[int64]bool{}
		for _, s := range seqs {
			want[s] = true
		}
		reversed := slices.Clone(seqs)
		slices.Reverse(reversed)
		rotated := slices.Clone(seqs)
		if len(rotated) > 1 {
			rotated = append(rotated[len(rotated)/2:], rotated[:len(rotated)/2]...)
		}
		ranges := seqrange.Ranges(seqs)
		checkRanges(t, ranges, want)
		for name, other := range map[string][]int64{"reversed": reversed, "rotated": rotated} {
			if got := seqrange.Ranges(other); !slices.Equal(got, ranges) {
				t.Fatalf("Ranges of the input %s = %v, want %v", name, got, ranges)
			}
		}
		if again := seqrange.Ranges(expand(ranges)); !slices.Equal(again, ranges) {
			t.Fatalf("Ranges of its own output = %v, want %v", again, ranges)
		}
	})
}

// FuzzCoalesce checks Coalesce against a brute-force oracle: a map from
// each sequence to its key.
//
// Properties, for any entries with distinct sequences (Coalesce's
// precondition; negatives and neighbours of both ends of int64 included)
// and keys from a small alphabet:
//   - Coalesce never panics;
//   - its runs are ascending, From <= To, and do not overlap;
//   - every sequence of a run was given, with the run's key, and together
//     the runs hold exactly the sequences given;
//   - runs are maximal: two runs that touch (To+1 == next From) have
//     different keys;
//   - it does not depend on the order of its input, and it is idempotent:
//     the entries its runs hold coalesce into the same runs.
func FuzzCoalesce(f *testing.F) {
	f.Add(int64(0), []byte{7, 0, 1, 0, 2, 0, 3, 1, 4, 0, 5, 0, 9, 0})
	f.Add(int64(0), []byte{})
	f.Add(int64(0), []byte{1, 0, 1, 1, 2, 0}) // a duplicate sequence: the first entry is kept
	f.Add(int64(math.MaxInt64-1), []byte{0, 0, 1, 0, 2, 0, 3, 1})
	f.Add(int64(math.MinInt64), []byte{0, 2, 1, 2, 0xff, 2})
	f.Add(int64(5), []byte{0xfb, 0, 0xfc, 0, 0xfd, 1, 0xfe, 1})
	f.Fuzz(func(t *testing.T, base int64, data []byte) {
		keyOf := map[int64]byte{}
		var entries []seqrange.Entry[byte]
		for i := 0; i+1 < len(data); i += 2 {
			s := sequencesOf(base, data[i:i+1])[0]
			if _, dup := keyOf[s]; dup {
				continue // sequences must be unique
			}
			keyOf[s] = data[i+1] % 3
			entries = append(entries, seqrange.Entry[byte]{Sequence: s, Key: data[i+1] % 3})
		}
		reversed := slices.Clone(entries)
		slices.Reverse(reversed)
		runs := seqrange.Coalesce(entries)
		covered := 0
		for i, run := range runs {
			n, ok := size(run.Range, len(keyOf))
			if !ok {
				t.Fatalf("run %d of %v is inverted or holds more sequences than the %d given", i, runs, len(keyOf))
			}
			covered += n
			for s := run.Range.From; ; s++ {
				if key, given := keyOf[s]; !given || key != run.Key {
					t.Fatalf("run %v of %v holds %d, given %v with key %d", run, runs, s, given, key)
				}
				if s == run.Range.To {
					break
				}
			}
			if i == 0 {
				continue
			}
			prev := runs[i-1]
			if prev.Range.To >= run.Range.From {
				t.Fatalf("runs %v and %v of %v overlap or are out of order", prev, run, runs)
			}
			if uint64(run.Range.From)-uint64(prev.Range.To) == 1 && prev.Key == run.Key {
				t.Fatalf("runs %v and %v of %v touch with one key: not coalesced", prev, run, runs)
			}
		}
		if covered != len(keyOf) {
			t.Fatalf("%v covers %d sequences, want the %d given", runs, covered, len(keyOf))
		}
		if got := seqrange.Coalesce(reversed); !slices.Equal(got, runs) {
			t.Fatalf("Coalesce of the input reversed = %v, want %v", got, runs)
		}
		var again []seqrange.Entry[byte]
		for _, run := range runs {
			for _, s := range expand([]taskapi.Range{run.Range}) {
				again = append(again, seqrange.Entry[byte]{Sequence: s, Key: run.Key})
			}
		}
		if got := seqrange.Coalesce(again); !slices.Equal(got, runs) {
			t.Fatalf("Coalesce of its own runs = %v, want %v", got, runs)
		}
	})
}
