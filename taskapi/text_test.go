package taskapi_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestEnumsAsText writes every state, result, activation and insertion
// mode as JSON and reads it back: by name, the same value; an unknown
// name or a value out of range is ErrInvalidArgument.
func TestEnumsAsText(t *testing.T) {
	type enums struct {
		States      []taskapi.State
		Results     []taskapi.Result
		Activations []taskapi.Activation
		Insertions  []taskapi.Insertion
	}
	all := enums{
		States:      []taskapi.State{taskapi.Active, taskapi.Ready, taskapi.Expired, taskapi.Failed, taskapi.Suspended, taskapi.Filtered, taskapi.Succeeded, taskapi.Redundant, taskapi.Recreated, taskapi.Cancelled},
		Results:     []taskapi.Result{taskapi.Failure, taskapi.Suspension, taskapi.Filter, taskapi.Success},
		Activations: []taskapi.Activation{taskapi.Running, taskapi.Paused, taskapi.Draining},
		Insertions:  []taskapi.Insertion{taskapi.Append, taskapi.Supersede, taskapi.Replace, taskapi.Delete},
	}
	text, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"States":["ACTIVE","READY","EXPIRED","FAILED","SUSPENDED","FILTERED","SUCCEEDED","REDUNDANT","RECREATED","CANCELLED"],` +
		`"Results":["FAILURE","SUSPENSION","FILTER","SUCCESS"],"Activations":["RUNNING","PAUSED","DRAINING"],` +
		`"Insertions":["APPEND","SUPERSEDE","REPLACE","DELETE"]}`
	if string(text) != want {
		t.Errorf("as JSON:\n%s\nwant\n%s", text, want)
	}
	var back enums
	if err := json.Unmarshal(text, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != want {
		t.Errorf("read back and written again:\n%s", again)
	}
	if _, err := json.Marshal(taskapi.State(42)); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("a state out of range as JSON: %v, want %v", err, taskapi.ErrInvalidArgument)
	}
	var s taskapi.State
	if err := json.Unmarshal([]byte(`"HAPPY"`), &s); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("an unknown state read from JSON: %v, want %v", err, taskapi.ErrInvalidArgument)
	}
}
