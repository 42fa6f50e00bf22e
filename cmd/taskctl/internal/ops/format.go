package ops

import "time"

// Ago says how long before now t was, or how long after, with write
// writing the duration: "4s ago", "in 2m"; "-" for the zero time.
func Ago(t, now time.Time, write func(time.Duration) string) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + write(-d)
	}
	return write(d) + " ago"
}
