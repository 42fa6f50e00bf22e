package taskpg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The Go side of the hot statements: turning a call's arguments into the
// arrays and rows that are sent, per batch of the usual size.

func batchCreations(n int) []taskapi.Creation {
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("id-%d", i%(n/2)), Input: fmt.Sprintf(`{"n":%d}`, i)}
	}
	return creations
}

func BenchmarkPushRows(b *testing.B) {
	stored, created := batch.Stored(taskapi.Append, batchCreations(1000))
	states := ordinals(created)
	b.ReportAllocs()
	for b.Loop() {
		pushRows(stored, states, nil)
	}
}

// BenchmarkCopySource produces the rows of a bulk Append for COPY.
func BenchmarkCopySource(b *testing.B) {
	stored, created := batch.Stored(taskapi.Append, batchCreations(1000))
	states := ordinals(created)
	sequences := make([]int64, len(stored))
	for i := range sequences {
		sequences[i] = int64(i + 1)
	}
	rows := pushRows(stored, states, nil)
	b.ReportAllocs()
	for b.Loop() {
		source := copySource("topic", sequences, rows)
		for source.Next() {
			if _, err := source.Values(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCompleteArgsPolled completes a FIFO poll of 100 with one result:
// one run.
func BenchmarkCompleteArgsPolled(b *testing.B) {
	completions := make([]taskapi.Completion, 100)
	for i := range completions {
		completions[i] = taskapi.Completion{Task: taskapi.Task{Sequence: int64(1000 + i)}, Decision: taskapi.Decision{Result: taskapi.Success}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if los, _, _, _, _ := completeArgs(completions); len(los) != 1 {
			b.Fatal(len(los))
		}
	}
}

// BenchmarkCompleteArgsMixed completes 100 shuffled tasks with mixed results
// and outputs: about one run per task.
func BenchmarkCompleteArgsMixed(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	completions := make([]taskapi.Completion, 100)
	for i := range completions {
		result := taskapi.Result(rng.IntN(4))
		completions[i] = taskapi.Completion{
			Task:     taskapi.Task{Sequence: int64(1000 + i)},
			Decision: taskapi.Decision{Result: result, Output: result.String()},
		}
	}
	rng.Shuffle(len(completions), func(i, j int) { completions[i], completions[j] = completions[j], completions[i] })
	b.ReportAllocs()
	for b.Loop() {
		completeArgs(completions)
	}
}
