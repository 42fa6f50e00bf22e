package main

import (
	"strings"
	"time"
)

// timeLayouts are the forms a timestamp flag accepts, besides a duration.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseWhen reads a point in time: "now", a timestamp (RFC 3339, or a date
// and time in UTC), or a duration meaning that long before now ("90m",
// "2h"). flag names the flag or argument in the error ("--since").
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("%s %q: give a duration without a sign, meaning that long ago", flag, s)
		}
		return now.Add(-d), nil
	}
	if t, ok := parseTimestamp(s); ok {
		return t, nil
	}
	return time.Time{}, usagef("%s %q is neither a time (2026-11-24T10:00:00Z, 2026-11-24 10:00) nor a duration (90m)", flag, s)
}

// parseTimestamp reads a timestamp in one of timeLayouts, UTC unless it
// names its zone.
func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseDuration reads a non-negative duration flag.
func parseDuration(flag, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, usagef("%s %q is not a duration such as 30s, 15m or 2h", flag, s)
	}
	return d, nil
}
