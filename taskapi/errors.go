package taskapi

import "errors"

// Sentinel errors. Implementations wrap them with context such as the topic
// and the sequence; test for them with errors.Is.
var (
	// ErrUnknownTopic reports a push to a topic that was not initialized.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrUnknownOwner reports a call that needs a registered owner, such as
	// Poll or Heartbeat, by an owner that is not registered.
	ErrUnknownOwner = errors.New("unknown owner")
	// ErrNotActive reports a completion of a task that is not Active and
	// owned by this owner.
	ErrNotActive = errors.New("task not active")
	// ErrStateMismatch reports a revival or reassignment of a task that is
	// not in the expected state, or not in the topic at all.
	ErrStateMismatch = errors.New("task state mismatch")
	// ErrInvalidArgument reports bad input: an empty or over-long name, a NUL
	// byte, invalid UTF-8, a negative duration, an unknown enum value or a
	// state the call does not allow.
	ErrInvalidArgument = errors.New("invalid argument")
)
