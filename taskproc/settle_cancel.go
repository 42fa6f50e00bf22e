// The settlement of batches with cancelled tasks: a batch whose every task
// was cancelled, and a completion that decided tasks cancelled before it ran.

package taskproc

import (
	"errors"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// cancelledAll finishes b, every task of which was cancelled: nothing is
// written. A completion learns it by its error.
func (s *batchSettler[Tx]) cancelledAll(b *Batch, how settlement) error {
	s.finish(b, "cancelled", Event{Kind: EventCancelled})
	if how.intent != toComplete {
		return nil
	}
	return fmt.Errorf("taskproc: every task of the batch of %q was cancelled while it ran; nothing was written: %w", b.topic, taskapi.ErrCancelled)
}

// errDecidedCancelled is the error of a completion function that decided
// tasks the runtime knew were cancelled before it ran.
var errDecidedCancelled = errors.New("taskproc: the completion function decided tasks that were cancelled before it ran")

// decidedCancelled returns the error of a completion function that decided
// (d) tasks of b which the runtime knew were cancelled before the attempt
// began (they are not in live, its tasks), nil when it decided none. Such
// a function worked from an earlier list of the batch's tasks and may have
// written their effects: its transaction must not commit, and the rest of
// the batch goes back to Ready, to be polled again without them. A task
// cancelled while the function ran is in live, and the database refuses
// its completion.
func decidedCancelled(b *Batch, live []taskapi.Task, d Decisions) error {
	var gone []int64
	for task := range d {
		if b.isCancelled(task) && !slices.Contains(live, task) {
			gone = append(gone, task.Sequence)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	return fmt.Errorf("%w (%s of %q): nothing of it was committed, and the other tasks were given back: %w",
		errDecidedCancelled, joinSequences(gone), b.topic, taskapi.ErrCancelled)
}
