package seqrange_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/taskrepo/taskrepo/internal/seqrange"
	"github.com/taskrepo/taskrepo/taskapi"
)

func TestCoalesce(t *testing.T) {
	t.Parallel()
	entries := []seqrange.Entry[string]{
		{7, "ok"}, {1, "ok"}, {2, "ok"}, {3, "fail"}, {4, "ok"}, {5, "ok"}, {9, "ok"},
	}
	got := fmt.Sprint(seqrange.Coalesce(entries))
	want := "[{{1 2} ok} {{3 3} fail} {{4 5} ok} {{7 7} ok} {{9 9} ok}]"
	if got != want {
		t.Errorf("Coalesce = %s, want %s", got, want)
	}
	if got := seqrange.Coalesce[string](nil); len(got) != 0 {
		t.Errorf("Coalesce(nil) = %v", got)
	}
}

func TestRanges(t *testing.T) {
	t.Parallel()
	got := seqrange.Ranges([]int64{10, 3, 4, 4, 5, 1, 11, 12})
	want := []taskapi.Range{{From: 1, To: 1}, {From: 3, To: 5}, {From: 10, To: 12}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Ranges = %v, want %v", got, want)
	}
}

// A batch of consecutive sequences with one decision, the common case after
// a FIFO poll, coalesces to a single range.
func BenchmarkCoalesceConsecutive(b *testing.B) {
	entries := make([]seqrange.Entry[int], 1000)
	b.ReportAllocs()
	for b.Loop() {
		for i := range entries {
			entries[i] = seqrange.Entry[int]{Sequence: int64(i + 1), Key: 3}
		}
		if runs := seqrange.Coalesce(entries); len(runs) != 1 {
			b.Fatal(len(runs))
		}
	}
}

// Shuffled sequences with mixed decisions: the worst case.
func BenchmarkCoalesceShuffled(b *testing.B) {
	entries := make([]seqrange.Entry[int], 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		for i := range entries {
			entries[i] = seqrange.Entry[int]{Sequence: int64(i + 1), Key: rng.IntN(4)}
		}
		rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
		seqrange.Coalesce(entries)
	}
}
