package demo

import (
	"cmp"
	"fmt"
	"maps"
	"sync"

	"github.com/taskrepo/taskrepo/taskproc"
)

// demoEvents is the consumers' observer. The runtime recovers from failed
// polls, heartbeats and completions by itself; the demo counts them for
// the summary instead of logging each, and stops at a loop that died.
type demoEvents struct {
	mu        sync.Mutex
	recovered map[string]int64 // failures by kind of event
	first     string           // the first failure's text
	fatal     error            // the first loop that died
}

// newDemoEvents returns an observer that has heard nothing yet.
func newDemoEvents() *demoEvents {
	return &demoEvents{recovered: map[string]int64{}}
}

// Notify hears one event.
func (e *demoEvents) Observe(ev taskproc.Event) {
	switch ev.Kind {
	case taskproc.EventFatal:
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.fatal == nil {
			e.fatal = fmt.Errorf("a consumer's loop of %s died: %w", ev.Topic, ev.Err)
		}
	case taskproc.EventPollFailed, taskproc.EventFailed, taskproc.EventHeartbeatFailed,
		taskproc.EventMaintenanceFailed, taskproc.EventReconcileFailed, taskproc.EventNotifierLost,
		taskproc.EventFenced, taskproc.EventAbandoned:
		e.mu.Lock()
		defer e.mu.Unlock()
		e.recovered[ev.Kind.String()]++
		if e.first == "" && ev.Err != nil {
			e.first = fmt.Sprintf("%s (%s): %v", ev.Kind, cmp.Or(ev.Topic, ev.Owner), ev.Err)
		}
	}
}

// died returns the error of the first loop that died, nil while none did.
func (e *demoEvents) died() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fatal
}

// failures returns the counts of the failures recovered from, and the
// first one's text.
func (e *demoEvents) failures() (map[string]int64, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.recovered), e.first
}
