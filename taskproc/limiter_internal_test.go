package taskproc

import (
	"context"
	"errors"
	"testing"
)

// A topic without a limiter never waits for a slot, but a done context
// still ends the acquisition, as a limiter's would.
func TestNoLimiterEndsWithItsContext(t *testing.T) {
	release, err := unlimited{}.Acquire(context.Background(), "t")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	release()
	release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (unlimited{}).Acquire(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a done context: err = %v, want context.Canceled", err)
	}
}
