package web

import (
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// The sampler's memory of completions is filled from the database in
// package main's tests (serve_memory_test.go); these test how it rounds
// windows, on pieces counted by hand: one completion in every piece.

// oneEach is what Results says of every piece: one task of topic "t"
// completed with Success.
var oneEach = map[string]map[taskapi.Result]int64{"t": {taskapi.Success: 1}}

// backfilled returns the memory of a sampler started at start whose
// backfill is done, with one completion in each piece, and the pieces.
func backfilled(start time.Time) (*completions, []piece) {
	c := newCompletions(start)
	todo := pieces(hourHorizonOf(start), start)
	for i := len(todo) - 1; i >= 0; i-- {
		c = c.with(todo[i], oneEach)
	}
	return c, todo
}

func TestPiecesAreWholeMinutesThenHours(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 14, 27, 0, time.UTC)
	_, todo := backfilled(start)
	// 23 whole hours from 10:00 the day before, 09:00 to 09:14, 60 whole
	// minutes, and 10:14:00 to 10:14:27.
	if len(todo) != 85 {
		t.Fatalf("%d pieces, want 85: %v", len(todo), todo)
	}
	for i, p := range todo {
		if i > 0 && !p.from.Equal(todo[i-1].to) {
			t.Errorf("piece %d starts at %v, the one before ends at %v", i, p.from, todo[i-1].to)
		}
		if p.minute != !p.from.Before(start.Truncate(time.Minute).Add(-time.Hour)) {
			t.Errorf("piece %v: minute %v", p, p.minute)
		}
	}
	if first, last := todo[0], todo[len(todo)-1]; !first.from.Equal(hourHorizonOf(start)) || !last.to.Equal(start) {
		t.Errorf("the pieces span %v to %v", first.from, last.to)
	}
}

func TestWindowsRoundToTheBuckets(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 14, 27, 0, time.UTC)
	c, _ := backfilled(start)
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 24, h, m, s, 0, time.UTC) }
	for _, w := range []struct {
		name           string
		from, to       time.Time
		wantFrom       time.Time
		wantTo         time.Time
		want           int64 // completions: pieces counted
		byHour, ending bool
	}{
		{"the last 24 hours", start.Add(-24 * time.Hour), start.Add(time.Minute), at(10, 0, 0).AddDate(0, 0, -1), start, 85, true, true},
		{"the last hour", start.Add(-time.Hour), start, at(9, 14, 0), start, 61, false, true},
		{"30 to 10 minutes ago", start.Add(-30 * time.Minute), start.Add(-10 * time.Minute), at(9, 44, 0), at(10, 4, 0), 20, false, false},
		{"3 to 2 hours ago", start.Add(-3 * time.Hour), start.Add(-2 * time.Hour), at(7, 0, 0), at(8, 0, 0), 1, true, false},
		{"5 hours ago to now", start.Add(-5*time.Hour - 40*time.Minute), start, at(5, 0, 0), start, 5 + 61, true, true},
	} {
		a, why := c.window(w.from, w.to)
		if why != "" {
			t.Errorf("%s: not from memory: %s", w.name, why)
			continue
		}
		if !a.from.Equal(w.wantFrom) || !a.to.Equal(w.wantTo) || a.byHour != w.byHour || a.present != w.ending {
			t.Errorf("%s: %v to %v (by hour %v, present %v), want %v to %v (%v, %v)",
				w.name, a.from, a.to, a.byHour, a.present, w.wantFrom, w.wantTo, w.byHour, w.ending)
		}
		if got := a.counts["t"].total(); got != w.want {
			t.Errorf("%s: %d completions, want %d", w.name, got, w.want)
		}
	}
}

func TestWindowsBeyondMemoryAreCountedInTheDatabase(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 14, 27, 0, time.UTC)
	c, _ := backfilled(start)
	fresh := newCompletions(start)
	for _, w := range []struct {
		name string
		c    *completions
		from time.Time
		why  string
	}{
		{"unbounded", c, time.Time{}, "no start"},
		{"25 hours", c, start.Add(-25 * time.Hour), "before the last 24 hours"},
		{"before the backfill", fresh, start.Add(-time.Hour), "still counting"},
	} {
		if _, why := w.c.window(w.from, start); !strings.Contains(why, w.why) {
			t.Errorf("%s: %q, want it to say %q", w.name, why, w.why)
		}
	}
}

func TestReadingsExtendMemoryAndTrimIt(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 14, 27, 0, time.UTC)
	c, _ := backfilled(start)
	later := start.Add(2 * time.Hour)
	c = readUntil(t, c, later)
	// The last 30 minutes: 11:44 to 12:14:27, 30 whole minutes and one
	// under way; 10:00 to 11:00, an hour that the backfill began (15
	// minutes) and a reading ended (one piece, 10:14:27 to 11:00).
	for window, want := range map[[2]time.Time]int64{
		{later.Add(-30 * time.Minute), later}:                                 31,
		{start.Truncate(time.Hour), start.Truncate(time.Hour).Add(time.Hour)}: 16,
	} {
		a, why := c.window(window[0], window[1])
		if why != "" || a.counts["t"].total() != want {
			t.Errorf("%v to %v: %v (%s), want %d", window[0], window[1], a.counts, why, want)
		}
	}
	for _, inner := range c.minutes {
		for m := range inner {
			if m < bucketOf(minuteHorizonOf(later), time.Minute) {
				t.Errorf("minute %v is still kept at %v", time.Unix(m*60, 0).UTC(), later)
			}
		}
	}
	if _, why := c.window(start.Add(-23*time.Hour), later); why == "" {
		t.Errorf("a window before the horizon came from memory")
	}
}

func TestMemoryStartsAfreshAfterAGapBeyondTheHorizon(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 14, 27, 0, time.UTC)
	c, _ := backfilled(start)
	readUntil(t, c, start.Add(30*time.Hour))
}

// readUntil counts on from c up to until as the readings do, and checks
// that c then holds what lies within the horizons of until.
func readUntil(t *testing.T, c *completions, until time.Time) *completions {
	t.Helper()
	for _, p := range pieces(c.until, until) {
		c = c.with(p, oneEach)
	}
	if !c.until.Equal(until) || !c.from.Equal(hourHorizonOf(until)) {
		t.Fatalf("counted %v to %v, want %v to %v", c.from, c.until, hourHorizonOf(until), until)
	}
	return c
}
