package taskapi

import (
	"encoding"
	"fmt"
)

// The enums read and write themselves as their names in JSON and any
// other text encoding: "FAILED", "SUCCESS", "PAUSED", "APPEND".
var (
	_ encoding.TextMarshaler   = State(0)
	_ encoding.TextUnmarshaler = (*State)(nil)
	_ encoding.TextMarshaler   = Result(0)
	_ encoding.TextUnmarshaler = (*Result)(nil)
	_ encoding.TextMarshaler   = Activation(0)
	_ encoding.TextUnmarshaler = (*Activation)(nil)
	_ encoding.TextMarshaler   = Insertion(0)
	_ encoding.TextUnmarshaler = (*Insertion)(nil)
)

// MarshalText writes s as its name; ErrInvalidArgument for a value that
// is no state.
func (s State) MarshalText() ([]byte, error) { return enumText(s, s.Valid()) }

// UnmarshalText reads a state's name, as ParseState does.
func (s *State) UnmarshalText(text []byte) (err error) {
	*s, err = ParseState(string(text))
	return err
}

// MarshalText writes r as its name; ErrInvalidArgument for a value that
// is no result.
func (r Result) MarshalText() ([]byte, error) { return enumText(r, r.Valid()) }

// UnmarshalText reads a result's name, as ParseResult does.
func (r *Result) UnmarshalText(text []byte) (err error) {
	*r, err = ParseResult(string(text))
	return err
}

// MarshalText writes a as its name; ErrInvalidArgument for a value that
// is no activation.
func (a Activation) MarshalText() ([]byte, error) { return enumText(a, a.Valid()) }

// UnmarshalText reads an activation's name, as ParseActivation does.
func (a *Activation) UnmarshalText(text []byte) (err error) {
	*a, err = ParseActivation(string(text))
	return err
}

// MarshalText writes i as its name; ErrInvalidArgument for a value that
// is no insertion mode.
func (i Insertion) MarshalText() ([]byte, error) { return enumText(i, i.Valid()) }

// UnmarshalText reads an insertion mode's name, as ParseInsertion does.
func (i *Insertion) UnmarshalText(text []byte) (err error) {
	*i, err = ParseInsertion(string(text))
	return err
}

// enumText is the text of e, valid or not.
func enumText(e fmt.Stringer, valid bool) ([]byte, error) {
	if !valid {
		return nil, fmt.Errorf("%s: %w", e, ErrInvalidArgument)
	}
	return []byte(e.String()), nil
}
