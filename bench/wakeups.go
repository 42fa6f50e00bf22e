package main

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskpg"
)

// repoOptions are the options of every taskpg repository of the run (see
// --wakeups); the figure "single push, wake-ups off" adds WithoutWakeUps.
var repoOptions []taskpg.Option

// parseWakeUps reads --wakeups: empty for taskpg's default, "off" for
// WithoutWakeUps, a duration (such as 0s or 10ms) for WithWakeUps.
func parseWakeUps(text string) ([]taskpg.Option, error) {
	switch text {
	case "":
		return nil, nil
	case "off":
		return []taskpg.Option{taskpg.WithoutWakeUps()}, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("--wakeups: %q is neither off nor a duration of 0 or more", text)
	}
	return []taskpg.Option{taskpg.WithWakeUps(d)}, nil
}
