package check

import (
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Schedule checks the name of a schedule (taskapi.Scheduler) as an
// identifier: non-empty, at most 500 bytes, valid UTF-8, no NUL.
func Schedule(schedule string) error {
	return name("schedule name", schedule, taskapi.MaxIdentifierLength)
}

// Mark checks the arguments of Mark: the topic and the schedule's name.
func Mark(topic, schedule string) error {
	if err := Topic(topic); err != nil {
		return err
	}
	return Schedule(schedule)
}

// Advance checks the arguments of Advance: the topic, the schedule's name
// and the two marks, as they are stored (in UTC, to the microsecond): from
// zero or within the years MinYear to MaxYear, to within them and later
// than from. Two marks within one microsecond are one stored mark, which
// could not move.
func Advance(topic, schedule string, from, to time.Time) error {
	if err := Mark(topic, schedule); err != nil {
		return err
	}
	if err := storable("mark from", from); err != nil {
		return err
	}
	if to.IsZero() {
		return fmt.Errorf("mark to is zero: %w", taskapi.ErrInvalidArgument)
	}
	if err := storable("mark to", to); err != nil {
		return err
	}
	if !to.Truncate(time.Microsecond).After(from.Truncate(time.Microsecond)) {
		return fmt.Errorf("mark to %v is not later than mark from %v (to the microsecond): %w",
			to, from, taskapi.ErrInvalidArgument)
	}
	return nil
}
