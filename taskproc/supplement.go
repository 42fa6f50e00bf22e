package taskproc

import (
	"errors"
	"fmt"
	"sync"
)

// ErrSupplementTaken refuses a second Put of a key into a Supplement.
var ErrSupplementTaken = errors.New("taskproc: supplement key registered already")

// A Supplement holds the data that the steps of one batch share, each value
// under a Key. A Composite gives every batch a fresh one. The zero
// Supplement is empty and ready to use; a Supplement is safe for use by
// many goroutines.
type Supplement struct {
	mu      sync.Mutex
	values  map[any]any     // by *Key[T], a T
	flights map[any]*flight // by *Key[T], the computations under way
}

// A flight is a GetOrCompute under way; the goroutines that ask for the
// same key meanwhile wait for done and share its outcome.
type flight struct {
	done  chan struct{}
	value any // set before done is closed
	err   error
}

// A Key names a value of type T in a Supplement. Keys are told apart by
// identity, not by name: the name is for error messages.
type Key[T any] struct {
	name string
}

// NewKey returns a new key named name.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

// Put stores v under k in s. A key holds one value for good: a second Put
// returns an error that wraps ErrSupplementTaken and changes nothing.
func (k *Key[T]) Put(s *Supplement, v T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[k]; ok {
		return fmt.Errorf("%w: %q", ErrSupplementTaken, k.name)
	}
	if s.values == nil {
		s.values = map[any]any{}
	}
	s.values[k] = v
	return nil
}

// Get returns the value stored under k in s, and false when there is none.
func (k *Key[T]) Get(s *Supplement) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return k.stored(s)
}

// GetOrCompute returns the value stored under k in s or, when there is
// none, stores and returns the value that compute returns. compute runs
// once even when several goroutines ask at the same time: the others wait
// for it and share its outcome. When compute fails (returns an error or
// panics), nothing is stored: the goroutines that waited get the error,
// and a later call computes again. compute must not ask s for k itself.
func (k *Key[T]) GetOrCompute(s *Supplement, compute func() (T, error)) (T, error) {
	s.mu.Lock()
	if v, ok := k.stored(s); ok {
		s.mu.Unlock()
		return v, nil
	}
	if f, ok := s.flights[k]; ok {
		s.mu.Unlock()
		<-f.done
		return k.outcome(f)
	}
	f := &flight{done: make(chan struct{})}
	if s.flights == nil {
		s.flights = map[any]*flight{}
	}
	s.flights[k] = f
	s.mu.Unlock()

	v, err := computeSafely(compute)
	k.land(s, f, v, err)
	return k.outcome(f)
}

// stored returns the value under k; s.mu must be held.
func (k *Key[T]) stored(s *Supplement) (T, bool) {
	v, ok := s.values[k]
	t, _ := v.(T) // a nil interface value of an interface type T fails the assertion, and is T's zero value
	return t, ok
}

// land ends flight f with v or err: a value is stored, unless a Put stored
// one meanwhile, which then wins.
func (k *Key[T]) land(s *Supplement, f *flight, v T, err error) {
	s.mu.Lock()
	defer close(f.done)
	defer s.mu.Unlock()
	delete(s.flights, k)
	if err != nil {
		f.err = err
		return
	}
	if stored, ok := k.stored(s); ok {
		f.value = stored
		return
	}
	if s.values == nil {
		s.values = map[any]any{}
	}
	s.values[k], f.value = v, v
}

// outcome returns the value or the error that flight f ended with.
func (k *Key[T]) outcome(f *flight) (T, error) {
	t, _ := f.value.(T)
	return t, f.err
}

// computeSafely calls compute, turning a panic into an error so that the
// waiting goroutines are not left waiting for ever.
func computeSafely[T any](compute func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, panicError(p)
		}
	}()
	return compute()
}
