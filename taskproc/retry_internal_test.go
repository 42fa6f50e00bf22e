package taskproc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExponentialBackoffDoublesWithJitterUpToItsCap(t *testing.T) {
	backoff := ExponentialBackoff(time.Second, time.Minute)
	for attempt := 1; attempt <= 100; attempt++ {
		ceiling := min(time.Second<<min(attempt-1, 20), time.Minute)
		seen := map[time.Duration]bool{}
		for range 50 {
			d := backoff(attempt)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, d, ceiling/2, ceiling)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("backoff(%d) gave %v every time: no jitter", attempt, seen)
		}
	}
	if d := ExponentialBackoff(0, time.Minute)(5); d != 0 {
		t.Errorf("a zero base waits %v, want 0", d)
	}
}

func TestWithRetryKeepsThePolicySane(t *testing.T) {
	s, err := apply(nil, []TopicOption{WithRetry(RetryPolicy{MaxAttempts: -3})})
	if err != nil || s.retry.MaxAttempts != 1 || s.retry.Backoff == nil {
		t.Errorf("WithRetry(-3 attempts, no backoff) = %+v, %v; want one attempt and the default backoff", s.retry, err)
	}
}

func TestAttemptsRecordEveryFailureInOrder(t *testing.T) {
	if _, ok := Attempts("plain failure"); ok {
		t.Error("Attempts of a plain output reports a record")
	}
	at := time.Date(2026, 11, 25, 1, 2, 3, 4, time.FixedZone("x", 3600))
	out, n := nextAttempt("plain failure", at, errors.New("one"))
	out, n2 := nextAttempt(out, at.Add(time.Second), fmt.Errorf("two: %s", strings.Repeat("é", 2*maxAttemptError)))
	attempts, ok := Attempts(out)
	if !ok || n != 1 || n2 != 2 || len(attempts) != 2 {
		t.Fatalf("Attempts = %+v, %v after attempts %d and %d", attempts, ok, n, n2)
	}
	if a := attempts[0]; a.Number != 1 || a.Error != "one" || !a.At.Equal(at) || a.At.Location() != time.UTC {
		t.Errorf("first attempt %+v, want number 1, error one, at %v in UTC", a, at)
	}
	if e := attempts[1].Error; len(e) > maxAttemptError+len("…") || !strings.HasSuffix(e, "…") || !strings.HasPrefix(e, "two: éé") {
		t.Errorf("a long error is kept as %d bytes %q…, want it cut on a rune boundary", len(e), e[:20])
	}
}

func TestDuePeriodsPushTheCurrentOneAndCatchUpOnlyAsAsked(t *testing.T) {
	hour := func(h int) time.Time { return time.Date(2026, 11, 25, h, 0, 0, 0, time.UTC) }
	now := hour(10).Add(30 * time.Minute)
	cases := []struct {
		mark    time.Time
		catchUp int
		want    []time.Time
	}{
		{time.Time{}, 5, []time.Time{hour(10)}},
		{hour(10), 5, nil},
		{hour(9), 0, []time.Time{hour(10)}},
		{hour(4), 0, []time.Time{hour(10)}},
		{hour(4), 2, []time.Time{hour(8), hour(9), hour(10)}},
		{hour(7), 9, []time.Time{hour(8), hour(9), hour(10)}},
	}
	for _, c := range cases {
		got, err := duePeriods(fixed(time.Hour), c.mark, now, c.catchUp)
		if err != nil || !slices.EqualFunc(got, c.want, time.Time.Equal) {
			t.Errorf("duePeriods(mark %v, catch-up %d) = %v, %v; want %v", c.mark, c.catchUp, got, err, c.want)
		}
	}
	daily := cron{expr: "0 6 * * 1-5", loc: time.UTC} // weekdays at six
	monday := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	got, err := duePeriods(daily, monday.AddDate(0, 0, -7), monday.AddDate(0, 0, 2).Add(time.Hour), 3)
	want := []time.Time{monday.AddDate(0, 0, -3), monday, monday.AddDate(0, 0, 1), monday.AddDate(0, 0, 2)} // Friday, then Monday to Wednesday
	if err != nil || !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("cron periods = %v, %v; want %v", got, err, want)
	}
}
