package web

import (
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestFailuresSeenJoinsTheCountAndTheCompletionsSince(t *testing.T) {
	counted := time.Date(2026, 11, 27, 10, 30, 20, 0, time.UTC)
	minute := bucketOf(counted, time.Minute)
	var failed, suspended, succeeded byResult
	failed[taskapi.Failure] = 2
	suspended[taskapi.Suspension] = 1
	succeeded[taskapi.Success] = 9
	v := view{
		tally: tally{at: counted, counts: map[string]map[taskapi.State]int64{
			"orders": {taskapi.Failed: 5, taskapi.Succeeded: 100},
			"quiet":  {taskapi.Succeeded: 7},
			"held":   {taskapi.Suspended: 3},
		}},
		done: &completions{minutes: buckets{
			"orders": {minute: failed},        // in the minute of the count: may follow it
			"new":    {minute + 1: failed},    // its first failures since the count
			"stale":  {minute - 1: failed},    // before the count: the count has them
			"calm":   {minute + 2: succeeded}, // no failure
			"paused": {minute + 1: suspended}, // suspended since
		}},
	}
	got := failuresSeen(v, []taskapi.State{taskapi.Failed, taskapi.Suspended})
	want := map[string]map[taskapi.State]int64{
		"orders": {taskapi.Failed: 7},
		"held":   {taskapi.Suspended: 3},
		"new":    {taskapi.Failed: 2},
		"paused": {taskapi.Suspended: 1},
	}
	if len(got) != len(want) {
		t.Errorf("topics %v, want those of %v", got, want)
	}
	for topic, states := range want {
		for state, n := range states {
			if sum := got[topic][state]; sum.Count != n || sum.Bound != taskapi.MaxSequence {
				t.Errorf("%s %s = %+v, want %d and no highest sequence", topic, state, sum, n)
			}
		}
	}
	if only := failuresSeen(v, []taskapi.State{taskapi.Suspended}); len(only) != 2 || only["orders"] != nil {
		t.Errorf("SUSPENDED alone: %v, want held and paused", only)
	}
}
