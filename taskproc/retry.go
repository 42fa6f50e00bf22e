package taskproc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// TransientError marks a failure that may pass: the task runs again later
// instead of ending with Failure (see RetryPolicy).
type TransientError struct{ Err error }

// Transient marks err as transient. A TaskFunc that returns it, or a Handler
// whose batch fails with it, ends the run of its tasks, and each task comes
// back after the RetryPolicy's backoff, in its place, until its attempts run
// out; then it ends with Failure and every attempt's error in its output
// (see Attempts). A nil err is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}

// Error returns the text of Err.
func (e *TransientError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TransientError) Unwrap() error { return e.Err }

// SnoozeError puts a task back as Ready, due After from now, without
// counting an attempt: "not now".
type SnoozeError struct{ After time.Duration }

// Snooze returns a SnoozeError: a TaskFunc that returns it, or a Handler
// whose batch fails with it, gives its tasks back as Ready, in their place,
// due d from now. The run does not count as an attempt, and the task's
// output stays as it was.
func Snooze(d time.Duration) error { return &SnoozeError{After: max(d, 0)} }

// Error says for how long.
func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.After) }

// A RetryPolicy says how often a task whose runs fail transiently runs,
// and how long it waits before each next attempt.
type RetryPolicy struct {
	// MaxAttempts is how many runs a task gets at most; the run that fails
	// transiently as the last one ends the task with Failure. Below one is
	// one.
	MaxAttempts int
	// Backoff returns how long to wait after the failed attempt (1 for the
	// first run) before the next one.
	Backoff func(attempt int) time.Duration
}

// Defaults of the retry policy.
const (
	DefaultMaxAttempts = 10
	DefaultBackoffBase = time.Second
	DefaultBackoffCap  = time.Hour
)

// DefaultRetryPolicy gives a task DefaultMaxAttempts runs, with an
// ExponentialBackoff from DefaultBackoffBase up to DefaultBackoffCap: the
// ten runs span four to nine minutes.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: DefaultMaxAttempts, Backoff: ExponentialBackoff(DefaultBackoffBase, DefaultBackoffCap)}
}

// ExponentialBackoff returns a backoff that waits about base after the first
// attempt and doubles with each one, never more than limit. Half of each
// wait is random, so that tasks that failed together do not all come back
// at once.
func ExponentialBackoff(base, limit time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := max(base, 0)
		for i := 1; i < attempt && d > 0 && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		if d <= 1 {
			return max(d, 0)
		}
		return d/2 + rand.N(d/2+1)
	}
}

// WithRetry sets the retry policy of transient failures
// (DefaultRetryPolicy). A nil Backoff keeps the default one.
func WithRetry(p RetryPolicy) TopicOption {
	return func(s *settings) {
		if p.Backoff == nil {
			p.Backoff = DefaultRetryPolicy().Backoff
		}
		p.MaxAttempts = max(p.MaxAttempts, 1)
		s.retry = p
	}
}

// afterwards is what becomes of a task whose run ends without a decision:
// a retry (cause non-nil), a snooze, or, when the run was interrupted (its
// context ended under it), a release.
type afterwards struct {
	cause       error
	after       time.Duration
	interrupted bool
}

// interrupted marks a task whose run its context's end cut short: it goes
// back to Ready, no attempt counted.
var interrupted = afterwards{interrupted: true}

// afterwardsOf tells whether err asks for a retry or a snooze.
func afterwardsOf(err error) (afterwards, bool) {
	var snooze *SnoozeError
	if errors.As(err, &snooze) {
		return afterwards{after: snooze.After}, true
	}
	var transient *TransientError
	if errors.As(err, &transient) {
		return afterwards{cause: err}, true
	}
	return afterwards{}, false
}
