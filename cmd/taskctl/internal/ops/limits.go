package ops

import (
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// LimitsWords says the limits of a topic in words, with write writing the
// numbers: "at most 5 ACTIVE tasks across the fleet, at most 2 per
// identifier"; "" for none. taskctl and its dashboard both say it, so that
// an operator reads the same words in either.
func LimitsWords(l taskapi.Limits, write func(int64) string) string {
	switch {
	case l.Active > 0 && l.PerIdentifier > 0:
		return fmt.Sprintf("at most %s across the fleet, at most %s per identifier", activeTasks(l.Active, write), write(l.PerIdentifier))
	case l.Active > 0:
		return fmt.Sprintf("at most %s across the fleet", activeTasks(l.Active, write))
	case l.PerIdentifier > 0:
		return fmt.Sprintf("at most %s per identifier across the fleet", activeTasks(l.PerIdentifier, write))
	}
	return ""
}

// activeTasks writes n ACTIVE tasks: "1 ACTIVE task", "5 ACTIVE tasks".
func activeTasks(n int64, write func(int64) string) string {
	if n == 1 {
		return "1 ACTIVE task"
	}
	return write(n) + " ACTIVE tasks"
}

// LimitsCell writes the limits of a topic in a table cell, with write
// writing the numbers: "5 / 2 per id", "5", "2 per id"; "-" for none, as
// a capacity's cell.
func LimitsCell(l taskapi.Limits, write func(int64) string) string {
	switch {
	case l.Active > 0 && l.PerIdentifier > 0:
		return write(l.Active) + " / " + write(l.PerIdentifier) + " per id"
	case l.Active > 0:
		return write(l.Active)
	case l.PerIdentifier > 0:
		return write(l.PerIdentifier) + " per id"
	}
	return "-"
}
