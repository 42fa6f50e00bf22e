package taskapi_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestTaskKey checks the idempotency key of a task: "task-" and the
// sequence in decimal, the same for every Task of one sequence whatever
// else it says (each run of the task), and another for every other
// sequence.
func TestTaskKey(t *testing.T) {
	t.Parallel()
	for sequence, want := range map[int64]string{
		1:                   "task-1",
		10:                  "task-10",
		1234567:             "task-1234567",
		taskapi.MaxSequence: "task-9223372036854775807",
	} {
		if got := (taskapi.Task{Sequence: sequence, Identifier: "a"}).Key(); got != want {
			t.Errorf("Key of task %d = %q, want %q", sequence, got, want)
		}
	}
	run := taskapi.Task{Sequence: 42, Identifier: "mail", Input: "first run"}
	again := taskapi.Task{Sequence: 42, Identifier: "mail", Input: "a later run"}
	if run.Key() != again.Key() {
		t.Errorf("Keys of task 42 = %q, %q; want one key", run.Key(), again.Key())
	}
	seen := map[string]int64{}
	for sequence := int64(1); sequence <= 10000; sequence++ {
		key := taskapi.Task{Sequence: sequence, Identifier: "mail"}.Key()
		if other, dup := seen[key]; dup {
			t.Fatalf("tasks %d and %d have the key %q", other, sequence, key)
		}
		seen[key] = sequence
	}
}
