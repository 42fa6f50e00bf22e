package web

import (
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// series returns points every step over span up to end, with the wait
// that wait gives at each time, always due.
func series(end time.Time, span, step time.Duration, wait func(at time.Time) time.Duration) []point {
	var points []point
	for at := end.Add(-span); !at.After(end); at = at.Add(step) {
		points = append(points, point{at: at, wait: wait(at), due: true})
	}
	return points
}

func TestWaitGrowing(t *testing.T) {
	end := time.Now().Truncate(time.Second)
	stuck := func(at time.Time) time.Duration { return 10*time.Second + at.Sub(end.Add(-time.Hour)) }
	behind := func(at time.Time) time.Duration { return at.Sub(end.Add(-time.Hour)) * 6 / 10 }
	steady := func(at time.Time) time.Duration { return time.Duration(at.Unix()%7) * time.Second }
	cases := map[string]struct {
		points []point
		want   bool
	}{
		"a stuck head":                      {series(end, time.Hour, 5*time.Second, stuck), true},
		"consumers at 40% of the pushes":    {series(end, time.Hour, 5*time.Second, behind), true},
		"a steady WAIT":                     {series(end, time.Hour, 5*time.Second, steady), false},
		"a stuck head, for less than 3m":    {series(end, growSpan-time.Second, time.Second, stuck), false},
		"a stuck head, exactly 3m of it":    {series(end, growSpan, time.Second, stuck), true},
		"one reading alone":                 {series(end, 0, time.Second, stuck), false},
		"not due at one reading of the 3m":  {notDueAt(series(end, time.Hour, 5*time.Second, stuck), end.Add(-time.Minute)), false},
		"not due before the 3m, stuck then": {notDueAt(series(end, time.Hour, 5*time.Second, stuck), end.Add(-10*time.Minute)), true},
	}
	for name, c := range cases {
		if _, got := growing(c.points); got != c.want {
			t.Errorf("%s: growing = %v, want %v", name, got, c.want)
		}
	}
}

// notDueAt returns points with the one at t not due.
func notDueAt(points []point, t time.Time) []point {
	for i := range points {
		if points[i].at.Equal(t) {
			points[i].due = false
		}
	}
	return points
}

func TestStalled(t *testing.T) {
	now := time.Now()
	quiet := 30 * time.Second
	done := newCompletions(settled(now))
	done = done.with(piece{from: settled(now).Add(-2 * time.Minute).Truncate(time.Minute), to: settled(now).Add(-time.Minute).Truncate(time.Minute), minute: true},
		map[string]map[taskapi.Result]int64{"long-ago": {taskapi.Success: 3}})
	done = done.with(piece{from: settled(now).Truncate(time.Minute), to: settled(now), minute: true},
		map[string]map[taskapi.Result]int64{"recent": {taskapi.Success: 3}})
	v := view{done: done, reading: reading{
		activations: map[string]taskapi.Activation{"waiting": taskapi.Running, "recent": taskapi.Running, "long-ago": taskapi.Running,
			"fresh": taskapi.Running, "deferred": taskapi.Running, "paused": taskapi.Paused, "draining": taskapi.Draining},
		waits: map[string]ops.Wait{
			"waiting": {Wait: time.Minute, Due: true}, "recent": {Wait: time.Minute, Due: true}, "long-ago": {Wait: time.Minute, Due: true},
			"fresh": {Wait: quiet - time.Second, Due: true}, "deferred": {}, "paused": {Wait: time.Hour, Due: true}, "draining": {Wait: time.Hour, Due: true},
		},
	}}
	for topic, want := range map[string]bool{"waiting": true, "recent": false, "long-ago": true, "fresh": false, "deferred": false, "paused": false, "draining": false} {
		if got := stalled(v, topic, quiet); got != want {
			t.Errorf("stalled(%s) = %v, want %v", topic, got, want)
		}
	}
}
