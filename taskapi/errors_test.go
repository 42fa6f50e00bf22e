package taskapi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestStateErrorNamesTheTasksAndUnwrapsToItsSentinel(t *testing.T) {
	t.Parallel()
	one := &taskapi.StateError{Topic: "t", Sequences: []int64{7}, Err: taskapi.ErrNotActive}
	wrapped := fmt.Errorf("taskpg: complete tasks of %q: %w", "t", one)
	if !errors.Is(wrapped, taskapi.ErrNotActive) || errors.Is(wrapped, taskapi.ErrStateMismatch) {
		t.Errorf("errors.Is on %v: want ErrNotActive only", wrapped)
	}
	var se *taskapi.StateError
	if !errors.As(wrapped, &se) || se != one {
		t.Fatalf("errors.As did not reach the StateError in %v", wrapped)
	}
	if got, want := one.Error(), "task 7: task not active"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	many := &taskapi.StateError{Sequences: make([]int64, 1000), Err: taskapi.ErrStateMismatch}
	for i := range many.Sequences {
		many.Sequences[i] = int64(i + 1)
	}
	got := many.Error()
	if want := "tasks 1, 2, 3, 4, 5, 6, 7, 8 and 992 more: task state mismatch"; got != want {
		t.Errorf("Error() of 1000 tasks = %q, want %q", got, want)
	}
}

func TestParseKeepsHugeNamesOutOfItsError(t *testing.T) {
	t.Parallel()
	_, err := taskapi.ParseState(strings.Repeat("x", 1<<20))
	if !errors.Is(err, taskapi.ErrInvalidArgument) || len(err.Error()) > 120 {
		t.Errorf("ParseState of 1 MiB: %d-byte error %.80q…, want a short ErrInvalidArgument", len(err.Error()), err)
	}
}
