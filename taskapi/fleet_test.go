package taskapi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestActivation checks the activation enum as TestEnums checks the others.
func TestActivation(t *testing.T) {
	t.Parallel()
	for i, want := range []string{"RUNNING", "PAUSED", "DRAINING"} {
		a := taskapi.Activation(i)
		if got := a.String(); got != want || !a.Valid() {
			t.Errorf("Activation(%d) = %q (valid %v), want %q", i, got, a.Valid(), want)
		}
		for _, name := range []string{want, strings.ToLower(want)} {
			if got, err := taskapi.ParseActivation(name); err != nil || got != a {
				t.Errorf("ParseActivation(%q) = %v, %v; want %v", name, got, err, a)
			}
		}
	}
	for _, bad := range []taskapi.Activation{-1, taskapi.Draining + 1} {
		if want := fmt.Sprintf("Activation(%d)", int(bad)); bad.Valid() || bad.String() != want {
			t.Errorf("Activation(%d): valid %v, String %q; want invalid, %q", int(bad), bad.Valid(), bad.String(), want)
		}
	}
	for _, bad := range []string{"", "STOPPED", "RUNNING\x00"} {
		if _, err := taskapi.ParseActivation(bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("ParseActivation(%q): error %v, want ErrInvalidArgument", bad, err)
		}
	}
	if taskapi.Activation(0) != taskapi.Running {
		t.Error("the zero Activation is not Running")
	}
}
