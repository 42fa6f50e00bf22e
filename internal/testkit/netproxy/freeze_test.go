package netproxy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
)

// giveUp is the deadline of a client's call on a frozen connection, which
// fails only once it has passed, unless the test waits for the server to
// end the session first.
const giveUp = time.Second

// sqlStarts returns a matcher of the statements whose text starts with
// prefix, whatever the case.
func sqlStarts(prefix string) func(netproxy.Statement) bool {
	return func(s netproxy.Statement) bool {
		return strings.HasPrefix(strings.ToLower(s.SQL), strings.ToLower(prefix))
	}
}

// gaveUp runs call in a goroutine with a context that ends after wait,
// and returns a channel on which comes, once call returns, nil when it
// failed once that context had ended, as a client's call on a frozen
// connection does, else what happened instead.
func gaveUp(t *testing.T, wait time.Duration, call func(ctx context.Context) error) <-chan error {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	outcome := make(chan error, 1)
	go func() {
		defer cancel()
		err := call(ctx)
		switch {
		case err == nil:
			outcome <- errors.New("the call got its reply")
		case ctx.Err() == nil:
			outcome <- fmt.Errorf("the call failed before its deadline: %w", err)
		default:
			outcome <- nil
		}
	}()
	return outcome
}

// await waits for the outcome of gaveUp, and fails t when the call did
// not give up by its own deadline, or did not return within patience.
func await(t *testing.T, outcome <-chan error) {
	t.Helper()
	select {
	case err := <-outcome:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(patience):
		t.Fatal("the call did not return")
	}
}

// eventually polls cond until it holds, and fails t when it does not
// within patience.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: not within %v", what, patience)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// fired waits until the freeze armed on p has fired, and returns the
// statement at which it did.
func fired(t *testing.T, p *netproxy.Proxy) netproxy.Statement {
	t.Helper()
	var st netproxy.Statement
	eventually(t, "the freeze fires", func(context.Context) (bool, error) {
		var ok bool
		st, ok = p.Fired()
		return ok, nil
	})
	return st
}

// checkFrozen checks that p counts want frozen connections.
func checkFrozen(t *testing.T, p *netproxy.Proxy, want int) {
	t.Helper()
	if got := p.Frozen(); got != want {
		t.Errorf("Frozen() = %d, want %d", got, want)
	}
}
