package web

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A gate admits as many readers as it has places; the next waits until one
// leaves, or gives up when its context ends.
func TestGateAdmitsItsPlaces(t *testing.T) {
	g := newGate(2)
	first, err := g.enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.enter(t.Context()); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := g.enter(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("a third reader entered a gate of two places: %v", err)
	}
	admitted := make(chan error, 1)
	go func() {
		_, err := g.enter(t.Context())
		admitted <- err
	}()
	select {
	case err := <-admitted:
		t.Fatalf("a third reader entered before one left: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	first()
	select {
	case err := <-admitted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting reader was not admitted once one left")
	}
	if g := newGate(0); cap(g) != 1 {
		t.Errorf("a gate of no places has %d, want 1", cap(g))
	}
}
