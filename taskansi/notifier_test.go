package taskansi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskproc"
)

var _ taskproc.Notifier = (*taskansi.PollNotifier)(nil)

// A PollNotifier wakes every topic at its interval until its context ends.
func TestPollNotifier(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wakes, dues, activations := make(chan []string, 100), make(chan []string, 100), make(chan []string, 100)
	done := make(chan error, 1)
	go func() {
		done <- taskansi.NewPollNotifier(time.Millisecond).Listen(ctx,
			func(topics []string) { wakes <- topics },
			func(topics []string) { dues <- topics },
			func(topics []string) { activations <- topics },
			func(err error) { t.Errorf("lost(%v)", err) })
	}()
	for range 3 {
		for _, c := range []chan []string{wakes, dues, activations} {
			select {
			case topics := <-c:
				if topics != nil {
					t.Fatalf("called with %q, want nil", topics)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("not called within 30 s")
			}
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Listen returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Listen did not return within 30 s")
	}
}
