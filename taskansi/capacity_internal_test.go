package taskansi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// pgError has the shape of pgx's PgError that overCapacity reads: a
// SQLState method and a Detail field.
type pgError struct {
	Code, Detail string
}

func (e *pgError) Error() string    { return "ERROR: " + e.Code }
func (e *pgError) SQLState() string { return e.Code }

func TestOverCapacityReadsTheDetailOfTR001(t *testing.T) {
	refused := fmt.Errorf("admit: %w", &pgError{Code: "TR001", Detail: "250 400"})
	err := overCapacity(refused, "t")
	var ce *taskapi.CapacityError
	if !errors.Is(err, taskapi.ErrOverCapacity) || !errors.As(err, &ce) {
		t.Fatalf("overCapacity = %v, want a *CapacityError", err)
	}
	if *ce != (taskapi.CapacityError{Topic: "t", Capacity: 250, Count: 400}) {
		t.Fatalf("overCapacity = %+v, want capacity 250 and count 400 of t", *ce)
	}
	// Any other error, or a DETAIL it cannot read, stays as it is.
	for _, other := range []error{
		&pgError{Code: "TR002", Detail: "250 400"}, &pgError{Code: "TR001", Detail: "over"}, errors.New("TR001"),
	} {
		if got := overCapacity(other, "t"); got != other {
			t.Errorf("overCapacity(%v) = %v, want it unchanged", other, got)
		}
	}
}
