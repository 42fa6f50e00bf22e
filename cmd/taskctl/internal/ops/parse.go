package ops

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/taskapi"
)

// ErrUsage is in the chain of the error of a bad value given by the user:
// a time, a duration, a state or a sequence that does not parse.
var ErrUsage = errors.New("bad usage")

// usagef returns an error of bad usage with the message of format.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// usageError is an error of bad usage; its message is the whole text.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

// timeLayouts are the forms a timestamp accepts, besides a duration.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseWhen reads a point in time: "now", a timestamp (RFC 3339, or a date
// and time in UTC), or a duration meaning that long before now ("90m",
// "2h"). name names the flag or field in the error ("--since").
func ParseWhen(name, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("%s %q: give a duration without a sign, meaning that long ago", name, s)
		}
		return now.Add(-d), nil
	}
	if t, ok := ParseTimestamp(s); ok {
		return t, nil
	}
	return time.Time{}, usagef("%s %q is neither a time (2026-11-24T10:00:00Z, 2026-11-24 10:00) nor a duration (90m)", name, s)
}

// ParseTimestamp reads a timestamp in one of the accepted layouts, UTC
// unless it names its zone.
func ParseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ParseDuration reads a non-negative duration.
func ParseDuration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, usagef("%s %q is not a duration such as 30s, 15m or 2h", name, s)
	}
	return d, nil
}

// ParseCapacity reads the capacity of a topic: a whole number of READY
// tasks, at least 1, or 0 to remove it. name names the argument or field
// in the error ("capacity").
func ParseCapacity(name, s string) (int64, error) {
	return parseBound(name, s, "READY", "capacity")
}

// ParseLimit reads a limit of a topic (taskapi.Limits): a whole number of
// ACTIVE tasks, at least 1, or 0 to remove it. name names the flag or
// field in the error ("--active").
func ParseLimit(name, s string) (int64, error) {
	return parseBound(name, s, "ACTIVE", "limit")
}

// parseBound reads a bound of a topic's tasks in state: a whole number,
// at least 1, or 0 to remove the bound, which the error calls what.
func parseBound(name, s, state, what string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, usagef("%s %q: give a whole number of %s tasks, at least 1, or 0 to remove the %s", name, s, state, what)
	}
	return n, nil
}

// ParseStates reads state names, comma-separated or repeated
// ("failed,expired").
func ParseStates(values []string) ([]taskapi.State, error) {
	var states []taskapi.State
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			s, err := taskapi.ParseState(name)
			if err != nil {
				return nil, usagef("--state %q: %v (states: %s)", name, err, StateNames())
			}
			states = append(states, s)
		}
	}
	return states, nil
}

// StateNames lists every state's name for error messages.
func StateNames() string {
	var names []string
	for _, s := range AllStates() {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// AllStates returns every state, in the order of their ordinals.
func AllStates() []taskapi.State {
	var all []taskapi.State
	for s := taskapi.Active; s.Valid(); s++ {
		all = append(all, s)
	}
	return all
}

// ParseSequences reads sequences, comma-separated or repeated.
func ParseSequences(values []string) ([]int64, error) {
	var seqs []int64
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n <= 0 {
				return nil, usagef("sequence %q is not a positive whole number", f)
			}
			seqs = append(seqs, n)
		}
	}
	return seqs, nil
}

// DeferUntil reads the time until which tasks are deferred: until (a
// timestamp, or "now": the zero time, pollable at once) or after (a
// duration from now); untilName and afterName name them in errors.
func DeferUntil(untilName, until, afterName, after string, now time.Time) (time.Time, error) {
	switch {
	case until != "" && after != "":
		return time.Time{}, usagef("give %s or %s, not both", untilName, afterName)
	case after != "":
		d, err := ParseDuration(afterName, after)
		return now.Add(d), err
	case until == "now":
		return time.Time{}, nil
	case until != "":
		if t, ok := ParseTimestamp(until); ok {
			return t, nil
		}
		return time.Time{}, usagef("%s %q is not a time such as 2026-11-25T06:00:00Z, or now", untilName, until)
	}
	return time.Time{}, usagef("say until when: %s TIME or %s DURATION", untilName, afterName)
}

// Cutoff reads the time before which a purge deletes: before (a time as
// ParseWhen reads it: a timestamp, now, or a duration ago) or olderThan (a
// duration before now); the zero time when neither is given. beforeName and olderName name them in errors.
func Cutoff(beforeName, before, olderName, olderThan string, now time.Time) (time.Time, error) {
	switch {
	case before != "" && olderThan != "":
		return time.Time{}, usagef("give %s or %s, not both", beforeName, olderName)
	case olderThan != "":
		d, err := ParseDuration(olderName, olderThan)
		return now.Add(-d), err
	case before != "":
		return ParseWhen(beforeName, before, now)
	}
	return time.Time{}, nil
}

// MaxReason bounds the reason of a cancellation that taskctl and its
// dashboard take: it goes into the output of every task cancelled, and
// into the audit log.
const MaxReason = 1000

// CheckReason checks the reason of a cancellation, which name names in
// errors: at most MaxReason bytes of valid UTF-8 text without a NUL byte
// (what taskapi.Canceller refuses otherwise, with ErrInvalidArgument).
func CheckReason(name, reason string) error {
	switch {
	case len(reason) > MaxReason:
		return usagef("%s is %d bytes long: give at most %d", name, len(reason), MaxReason)
	case !utf8.ValidString(reason):
		return usagef("%s is not valid UTF-8 text", name)
	case strings.ContainsRune(reason, 0):
		return usagef("%s holds a NUL byte", name)
	}
	return nil
}
