package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// WaitPage is how many READY tasks Waiting looks at to find the first one
// that is due.
const WaitPage = 100

// Wait is what waits at the head of a topic at one moment.
type Wait struct {
	// Oldest is when the oldest READY task was created; zero when none is
	// READY.
	Oldest time.Time
	// Wait is how long the READY task that a FIFO poll takes next has
	// waited: since it was created, or since its NotBefore when it was
	// deferred. The database records no start times, so this is the
	// push→start latency that task will have.
	Wait time.Duration
	// Due says that a READY task is due, so that Wait means something.
	Due bool
}

// Waiting reads the head of the READY tasks of topic at now: the oldest,
// and the wait of the first that is due among the first WaitPage (tasks
// deferred past now are skipped). One index probe for the head of the
// topic, a page more when the head is deferred; no count.
func Waiting(ctx context.Context, s Pager, topic string, now time.Time) (Wait, error) {
	ready := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
	var w Wait
	for _, size := range []int{1, WaitPage} { // the head alone is due but for deferred tasks
		page, err := s.Page(ctx, topic, ready, taskapi.Inception, size, taskapi.Forward)
		if err != nil {
			return Wait{}, fmt.Errorf("read the READY tasks of %q: %w", topic, err)
		}
		if len(page) == 0 {
			return w, nil
		}
		w.Oldest = page[0].Created
		for _, info := range page {
			if info.NotBefore.After(now) {
				continue
			}
			since := info.Created
			if info.NotBefore.After(since) {
				since = info.NotBefore
			}
			w.Wait, w.Due = max(now.Sub(since), 0), true
			return w, nil
		}
	}
	return w, nil
}
