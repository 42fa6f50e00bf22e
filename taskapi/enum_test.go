package taskapi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// enumCase checks one enum: names by ordinal, parsing, validity.
type enumCase struct {
	kind   string
	names  []string
	name   func(i int) string
	valid  func(i int) bool
	parse  func(s string) (int, error)
	values int
}

func enumOf[E interface {
	~int
	String() string
	Valid() bool
}](kind string, parse func(string) (E, error), names ...string) enumCase {
	return enumCase{
		kind:   kind,
		names:  names,
		name:   func(i int) string { return E(i).String() },
		valid:  func(i int) bool { return E(i).Valid() },
		parse:  func(s string) (int, error) { e, err := parse(s); return int(e), err },
		values: len(names),
	}
}

func TestEnums(t *testing.T) {
	t.Parallel()
	tests := []enumCase{
		enumOf("State", taskapi.ParseState, "ACTIVE", "READY", "EXPIRED", "FAILED", "SUSPENDED", "FILTERED", "SUCCEEDED", "RECREATED", "REDUNDANT", "CANCELLED"),
		enumOf("Result", taskapi.ParseResult, "FAILURE", "SUSPENSION", "FILTER", "SUCCESS"),
		enumOf("Insertion", taskapi.ParseInsertion, "APPEND", "SUPERSEDE", "REPLACE", "DELETE"),
		enumOf("Order", taskapi.ParseOrder, "FIFO", "LIFO"),
		enumOf("Condition", taskapi.ParseCondition, "UNCONDITIONAL", "SINGULAR_BY_IDENTIFIER",
			"SINGULAR_BY_IDENTIFIER_SUSPEND_ON_FAILURE", "SINGULAR_BY_IDENTIFIER_SUSPEND_UNTIL_SUCCESS"),
		enumOf("Revivification", taskapi.ParseRevivification, "REVIVE_APPEND", "REVIVE_SUPERSEDE", "REVIVE_REPLACE", "REVIVE_RESET"),
		enumOf("Junction", taskapi.ParseJunction, "SINGULAR", "ETERNAL"),
		enumOf("Direction", taskapi.ParseDirection, "FORWARD", "BACKWARD"),
		enumOf("Snapshot", taskapi.ParseSnapshot, "TOTAL", "RECENT"),
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			for i, want := range tt.names {
				if got := tt.name(i); got != want {
					t.Errorf("%s(%d).String() = %q, want %q", tt.kind, i, got, want)
				}
				if !tt.valid(i) {
					t.Errorf("%s(%d) is not valid", tt.kind, i)
				}
				if got, err := tt.parse(want); err != nil || got != i {
					t.Errorf("parse %q = %d, %v; want %d", want, got, err, i)
				}
			}
			for _, bad := range []int{-1, tt.values} {
				if tt.valid(bad) {
					t.Errorf("%s(%d) is valid", tt.kind, bad)
				}
				if got, want := tt.name(bad), fmt.Sprintf("%s(%d)", tt.kind, bad); got != want {
					t.Errorf("%s(%d).String() = %q, want %q", tt.kind, bad, got, want)
				}
			}
			for _, bad := range []string{"", "NOPE", "READY\x00"} {
				if _, err := tt.parse(bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
					t.Errorf("parse %q: error %v, want ErrInvalidArgument", bad, err)
				}
			}
		})
	}
}

func TestParseAcceptsGoNamesAndAnyCase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want taskapi.Condition
	}{
		{"singular_by_identifier", taskapi.SingularByIdentifier},
		{"SingularByIdentifierSuspendOnFailure", taskapi.SingularByIdentifierSuspendOnFailure},
		{"Unconditional", taskapi.Unconditional},
	}
	for _, tt := range tests {
		if got, err := taskapi.ParseCondition(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseCondition(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if got, err := taskapi.ParseRevivification("reset"); err != nil || got != taskapi.ReviveReset {
		t.Errorf("ParseRevivification(reset) = %v, %v", got, err)
	}
}

func TestResultStatesAndMerge(t *testing.T) {
	t.Parallel()
	states := map[taskapi.Result]taskapi.State{
		taskapi.Failure:    taskapi.Failed,
		taskapi.Suspension: taskapi.Suspended,
		taskapi.Filter:     taskapi.Filtered,
		taskapi.Success:    taskapi.Succeeded,
	}
	for result, state := range states {
		if got := result.State(); got != state {
			t.Errorf("%v.State() = %v, want %v", result, got, state)
		}
		if got, ok := state.Result(); !ok || got != result {
			t.Errorf("%v.Result() = %v, %v; want %v", state, got, ok, result)
		}
	}
	for _, s := range []taskapi.State{taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Recreated, taskapi.Redundant} {
		if _, ok := s.Result(); ok {
			t.Errorf("%v has a result", s)
		}
	}
	merges := []struct{ a, b, want taskapi.Result }{
		{taskapi.Success, taskapi.Filter, taskapi.Filter},
		{taskapi.Filter, taskapi.Suspension, taskapi.Suspension},
		{taskapi.Suspension, taskapi.Failure, taskapi.Failure},
		{taskapi.Failure, taskapi.Success, taskapi.Failure},
		{taskapi.Success, taskapi.Success, taskapi.Success},
	}
	for _, m := range merges {
		if got := m.a.Merge(m.b); got != m.want {
			t.Errorf("%v.Merge(%v) = %v, want %v", m.a, m.b, got, m.want)
		}
		if got := m.b.Merge(m.a); got != m.want {
			t.Errorf("%v.Merge(%v) = %v, want %v", m.b, m.a, got, m.want)
		}
	}
}

func TestStateRanges(t *testing.T) {
	t.Parallel()
	for s := taskapi.Active; s <= taskapi.Cancelled; s++ {
		if got, want := s.Cancellable(), s == taskapi.Ready || s == taskapi.Active || s == taskapi.Suspended; got != want {
			t.Errorf("%v.Cancellable() = %v", s, got)
		}
		if got, want := s.Completed(), s >= taskapi.Failed && s <= taskapi.Succeeded; got != want {
			t.Errorf("%v.Completed() = %v", s, got)
		}
		if got, want := s.Revivable(), s >= taskapi.Expired && s <= taskapi.Succeeded; got != want {
			t.Errorf("%v.Revivable() = %v", s, got)
		}
	}
}

func TestRange(t *testing.T) {
	t.Parallel()
	if !taskapi.Unbounded.Contains(1) || !taskapi.Unbounded.Contains(taskapi.MaxSequence) {
		t.Error("Unbounded does not contain every sequence")
	}
	empty := []taskapi.Range{{From: 5, To: 4}, {From: taskapi.Inception, To: taskapi.Inception}, {From: -3, To: -1}}
	for _, r := range empty {
		if !r.Empty() {
			t.Errorf("%+v is not empty", r)
		}
	}
	if (taskapi.Range{From: 3, To: 3}).Empty() {
		t.Error("a one-sequence range is empty")
	}
}

func TestConditionBlocking(t *testing.T) {
	t.Parallel()
	tests := map[taskapi.Condition][]taskapi.State{
		taskapi.Unconditional:                           nil,
		taskapi.SingularByIdentifier:                    nil,
		taskapi.SingularByIdentifierSuspendOnFailure:    {taskapi.Expired, taskapi.Failed},
		taskapi.SingularByIdentifierSuspendUntilSuccess: {taskapi.Expired, taskapi.Failed, taskapi.Suspended},
	}
	for c, want := range tests {
		if got := c.Blocking(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v.Blocking() = %v, want %v", c, got, want)
		}
	}
}
