package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/taskrepo/taskrepo/taskapi"
)

// topFakeStore is a store whose readings top's view shows: the embedded
// store is nil, so a method top does not use panics.
type topFakeStore struct {
	Store
	topics []string // each has 7 ACTIVE tasks and is DRAINING
	fail   error    // every listing of topics fails with it
}

// Topics lists f's topics, or fails.
func (f *topFakeStore) Topics(context.Context) ([]string, error) { return f.topics, f.fail }

// Shown names the fake database.
func (f *topFakeStore) Shown() string { return "fake://db" }

// Activations says every topic drains.
func (f *topFakeStore) Activations(context.Context) (map[string]taskapi.Activation, error) {
	out := map[string]taskapi.Activation{}
	for _, t := range f.topics {
		out[t] = taskapi.Draining
	}
	return out, nil
}

// Count gives every topic 7 ACTIVE tasks.
func (f *topFakeStore) Count(context.Context, taskapi.Snapshot, taskapi.Counting, taskapi.Range) (map[string]map[taskapi.State]taskapi.Summary, error) {
	out := map[string]map[taskapi.State]taskapi.Summary{}
	for _, t := range f.topics {
		out[t] = map[taskapi.State]taskapi.Summary{taskapi.Active: {Count: 7, Bound: 7}}
	}
	return out, nil
}

// Results says nothing was completed.
func (f *topFakeStore) Results(context.Context, time.Time, time.Time) (map[string]map[taskapi.Result]int64, error) {
	return nil, nil
}

// Resolve says nothing was pushed.
func (f *topFakeStore) Resolve(context.Context, time.Time, bool) (int64, error) {
	return taskapi.MaxSequence, nil
}

// Owners says no owner is alive.
func (f *topFakeStore) Owners(context.Context, time.Duration) ([]string, error) { return nil, nil }

// topView runs a reading of s through the view as the live view does, and
// returns the model and what it shows.
func topView(t *testing.T, m tea.Model) (tea.Model, string) {
	t.Helper()
	m, read := m.Update(topTickMsg{})
	if read == nil {
		t.Fatal("the view does not read when its interval is up")
	}
	m, next := m.Update(read())
	if next == nil {
		t.Fatal("after a reading the view does not plan the next one")
	}
	return m, m.View().Content
}

// TestTopViewShowsAFailedReadingAndCarriesOn checks that a failed reading
// shows in the view, the next one clears it, and q, esc and ctrl+c quit.
func TestTopViewShowsAFailedReadingAndCarriesOn(t *testing.T) {
	t.Parallel()
	fake := &topFakeStore{topics: []string{"alpha"}, fail: errors.New("connection refused")}
	var m tea.Model = topModel{ctx: t.Context(), store: fake, cfg: Config{Interval: time.Second, Window: time.Second, Within: time.Second}}
	m, view := topView(t, m)
	if !strings.Contains(view, "failed: list topics: connection refused; trying again every 1s") {
		t.Errorf("the view does not show the failed reading:\n%s", view)
	}
	fake.fail = nil
	if m, view = topView(t, m); strings.Contains(view, "failed") || !strings.Contains(view, "alpha  DRAINING") {
		t.Errorf("after a good reading the view shows:\n%s", view)
	}
	for _, key := range []tea.KeyPressMsg{{Code: 'q', Text: "q"}, {Code: tea.KeyEscape}, {Code: 'c', Mod: tea.ModCtrl}} {
		if _, cmd := m.Update(key); cmd == nil || cmd() != tea.Quit() {
			t.Errorf("%s does not quit", key)
		}
	}
}

// TestTopViewFitsTheTerminal checks that the view keeps to the terminal's
// size and says how many topics it left out.
func TestTopViewFitsTheTerminal(t *testing.T) {
	t.Parallel()
	fake := &topFakeStore{}
	for i := range 50 {
		fake.topics = append(fake.topics, fmt.Sprintf("topic-%02d", i))
	}
	var m tea.Model = topModel{ctx: t.Context(), store: fake, cfg: Config{Interval: time.Second, Window: time.Second, Within: time.Second}}
	m, _ = m.Update(tea.WindowSizeMsg{Width: 60, Height: 12})
	m, view := topView(t, m)
	checkTopFits(t, view, 60, 12, "topic-00", "… and 44 more topics")
	fake.fail = errors.New("failed to connect to `user=postgres database=tasks`: dial tcp 127.0.0.1:5432: connect: connection refused")
	_, view = topView(t, m)
	checkTopFits(t, view, 60, 12, "topic-00", "more topics", "connection refused;")
}

// checkTopFits fails t unless view fits in width × height and shows every
// one of wants.
func checkTopFits(t *testing.T, view string, width, height int, wants ...string) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > height {
		t.Errorf("on a %dx%d terminal the view has %d lines:\n%s", width, height, len(lines), view)
	}
	for _, line := range lines {
		if w := lipgloss.Width(line); w > width {
			t.Errorf("line %q is %d wide on a %d-column terminal", line, w, width)
		}
	}
	flat := strings.Join(strings.Fields(view), " ")
	for _, want := range wants {
		if !strings.Contains(flat, want) {
			t.Errorf("the view does not show %q:\n%s", want, view)
		}
	}
}

// topPanickyStore panics when top lists its topics, as a broken driver
// might.
type topPanickyStore struct{ topFakeStore }

// Topics panics.
func (*topPanickyStore) Topics(context.Context) ([]string, error) { panic("the driver broke") }

// TestTopViewSurvivesAPanic checks that a panic while reading shows as an
// error of one line in the view, not as a stack trace, and the view goes on.
func TestTopViewSurvivesAPanic(t *testing.T) {
	t.Parallel()
	var m tea.Model = topModel{ctx: t.Context(), store: &topPanickyStore{}, cfg: Config{Interval: time.Second, Window: time.Second, Within: time.Second}}
	if _, view := topView(t, m); !strings.Contains(view, "failed: internal error: the driver broke;") || strings.Contains(view, "goroutine") {
		t.Errorf("after a panic the view shows:\n%s", view)
	}
}
