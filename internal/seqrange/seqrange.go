// Package seqrange coalesces sequences into ranges, so that an implementation
// can send one range where a caller named many consecutive tasks.
package seqrange

import (
	"cmp"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Entry is a sequence with the key it must be stored with, such as a decision.
type Entry[K comparable] struct {
	Sequence int64
	Key      K
}

// Run is a range of consecutive sequences that share one key.
type Run[K comparable] struct {
	Range taskapi.Range
	Key   K
}

// Coalesce sorts entries by sequence and joins consecutive sequences with the
// same key into runs. Sequences must be unique. entries is sorted in place.
func Coalesce[K comparable](entries []Entry[K]) []Run[K] {
	slices.SortFunc(entries, func(a, b Entry[K]) int {
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	var runs []Run[K]
	for _, e := range entries {
		if n := len(runs); n > 0 && runs[n-1].Key == e.Key && runs[n-1].Range.To+1 == e.Sequence {
			runs[n-1].Range.To = e.Sequence
			continue
		}
		runs = append(runs, Run[K]{Range: taskapi.Range{From: e.Sequence, To: e.Sequence}, Key: e.Key})
	}
	return runs
}

// Ranges sorts sequences, drops duplicates and joins consecutive ones into ranges.
func Ranges(sequences []int64) []taskapi.Range {
	slices.Sort(sequences)
	sequences = slices.Compact(sequences)
	entries := make([]Entry[struct{}], len(sequences))
	for i, s := range sequences {
		entries[i].Sequence = s
	}
	runs := Coalesce(entries)
	ranges := make([]taskapi.Range, len(runs))
	for i, r := range runs {
		ranges[i] = r.Range
	}
	return ranges
}
