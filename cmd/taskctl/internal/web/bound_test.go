package web

import (
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestSlowNote: a confirmation of an action on tens of thousands of tasks
// says how long it may take; one of a hundred says nothing.
func TestSlowNote(t *testing.T) {
	if lines := slowNote(exactly(100), "purge"); len(lines) != 0 {
		t.Errorf("a purge of 100 tasks: %q, want no note", lines)
	}
	lines := slowNote(exactly(40_000), "deferral")
	if len(lines) != 1 || !strings.Contains(lines[0], "The deferral may take about") || !strings.Contains(lines[0], "the result page answers when it is done") {
		t.Errorf("a deferral of 40,000 tasks: %q, want a note of how long it may take", lines)
	}
}

// TestBoundNarrows: a bound cuts a span at its sequence; an unread one
// leaves it.
func TestBoundNarrows(t *testing.T) {
	b := bound{seq: 40, at: time.Now()}
	if got := b.narrow(taskapi.Unbounded); got != (taskapi.Range{From: taskapi.Inception, To: 40}) {
		t.Errorf("narrow(Unbounded) = %v, want up to 40", got)
	}
	if got := b.narrow(taskapi.Range{From: 5, To: 20}); got != (taskapi.Range{From: 5, To: 20}) {
		t.Errorf("narrow(5..20) = %v, want it unchanged", got)
	}
	b.unread = true
	if got := b.narrow(taskapi.Unbounded); got != taskapi.Unbounded {
		t.Errorf("an unread bound narrowed Unbounded to %v", got)
	}
}
