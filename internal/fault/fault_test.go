package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/internal/fault"
	"github.com/taskrepo/taskrepo/taskapi"
)

var sentinels = []error{
	taskapi.ErrUnknownTopic, taskapi.ErrUnknownOwner, taskapi.ErrNotActive, taskapi.ErrStateMismatch,
	taskapi.ErrInvalidArgument, taskapi.ErrConflict, taskapi.ErrUnavailable,
}

// wantSentinels fails t unless err holds exactly the sentinels want and
// keeps cause in its chain.
func wantSentinels(t *testing.T, what string, err, cause error, want ...error) {
	t.Helper()
	if !errors.Is(err, cause) {
		t.Errorf("%s = %v, lost %v", what, err, cause)
	}
	for _, s := range sentinels {
		held, wanted := errors.Is(err, s), errors.Is(errors.Join(want...), s)
		if held != wanted {
			t.Errorf("%s = %v: holds %v: %v, want %v", what, err, s, held, wanted)
		}
	}
}

func TestState(t *testing.T) {
	for code, want := range map[string]error{
		"40001": taskapi.ErrConflict, "40P01": taskapi.ErrConflict, "55P03": taskapi.ErrConflict,
		"08000": taskapi.ErrUnavailable, "08003": taskapi.ErrUnavailable, "08006": taskapi.ErrUnavailable,
		"57P01": taskapi.ErrUnavailable, "57P02": taskapi.ErrUnavailable, "57P03": taskapi.ErrUnavailable,
		"53300": taskapi.ErrUnavailable, "57014": taskapi.ErrUnavailable,
		"25006": taskapi.ErrUnavailable, "25P03": taskapi.ErrUnavailable, "57P05": taskapi.ErrUnavailable,
		"22021": taskapi.ErrInvalidArgument, "22P05": taskapi.ErrInvalidArgument, "22001": taskapi.ErrInvalidArgument,
		"42501": taskapi.ErrPermission,
		"23505": nil, "23514": nil, "22P02": nil, "53200": nil, "28P01": nil, "": nil, "0": nil,
		"25000": nil, "25001": nil, "25P02": nil, "57000": nil, "57P04": nil, "53000": nil, "42502": nil,
	} {
		if got := fault.State(code); got != want {
			t.Errorf("State(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestMarkKeepsTheErrorAndAddsTheSentinelOnce(t *testing.T) {
	cause := errors.New("cause")
	wantSentinels(t, "Mark(cause, nil)", fault.Mark(cause, nil), cause)
	wantSentinels(t, "Mark(cause, ErrUnavailable)", fault.Mark(cause, taskapi.ErrUnavailable), cause, taskapi.ErrUnavailable)
	marked := fault.Mark(cause, taskapi.ErrConflict)
	if again := fault.Mark(marked, taskapi.ErrConflict); again != marked {
		t.Errorf("Mark of a marked error = %v, want it unchanged", again)
	}
	for _, ended := range []error{context.Canceled, context.DeadlineExceeded} {
		err := fmt.Errorf("%w (the server stopped the statement: %w)", ended, cause)
		wantSentinels(t, "Mark(ended, ErrUnavailable)", fault.Mark(err, taskapi.ErrUnavailable), cause)
		wantSentinels(t, "Mark(ended, ErrConflict)", fault.Mark(err, taskapi.ErrConflict), cause, taskapi.ErrConflict)
	}
}

func TestAbortedKeepsTheFunctionsErrorAndOnlyTransientClasses(t *testing.T) {
	mine := errors.New("the function's own")
	fnErr := fmt.Errorf("handler: %w (%w)", mine, taskapi.ErrNotActive)
	undo := errors.New("conn closed")
	for _, c := range []struct {
		name           string
		sentinel, undo error
		want           []error
	}{
		{"a plain error", nil, nil, []error{taskapi.ErrNotActive}},
		{"a violation of the caller's constraint", taskapi.ErrInvalidArgument, nil, []error{taskapi.ErrNotActive}},
		{"an unknown topic", taskapi.ErrUnknownTopic, nil, []error{taskapi.ErrNotActive}},
		{"a conflict", taskapi.ErrConflict, nil, []error{taskapi.ErrNotActive, taskapi.ErrConflict}},
		{"a terminated session", taskapi.ErrUnavailable, nil, []error{taskapi.ErrNotActive, taskapi.ErrUnavailable}},
		{"a failed rollback", nil, undo, []error{taskapi.ErrNotActive, taskapi.ErrUnavailable}},
		{"a conflict and a failed rollback", taskapi.ErrConflict, undo,
			[]error{taskapi.ErrNotActive, taskapi.ErrConflict, taskapi.ErrUnavailable}},
	} {
		got := fault.Aborted(fnErr, c.sentinel, c.undo)
		wantSentinels(t, "Aborted with "+c.name, got, mine, c.want...)
	}
	ended := fmt.Errorf("handler: %w", context.Canceled)
	wantSentinels(t, "Aborted of a cancelled function with a failed rollback", fault.Aborted(ended, nil, undo), context.Canceled)
}
