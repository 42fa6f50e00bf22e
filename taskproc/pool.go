package taskproc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A handler that runs the caller's function inside the transaction that
// completes its tasks (ParallelTx, a Composite's contexts, CompleteTx)
// holds a connection of the pool for as long as the function runs. The
// runtime's own work (heartbeats, the keeper, terms, polls, settlements,
// give-backs) needs connections of the same pool, and must never wait
// behind the handlers for one: a stalled heartbeat fences the owner, a
// stalled renewal loses the term. So the runtime keeps reserve connections
// of the pool for itself:
//
//   - at Start, a Client (or a Manager alone) whose handlers could hold
//     more connections at once than the pool has beside the reserve
//     refuses to start, naming the numbers;
//   - while it runs, the handlers' transactions take turns on the
//     connections the reserve leaves them (connGate), also those of a
//     handler whose needs the runtime cannot count.
//
// The pool's size comes from the transaction function (taskapi.PoolSize);
// one that does not tell it, or a pool without a limit, is not checked.
// Connections that the caller's functions take of the pool themselves,
// beside their transaction, are the caller's to count (docs/operating.md).

// reserve is how many connections of the pool the runtime keeps for its
// own work: one for the keeper, one for the loops and settlements.
const reserve = 2

// A holder is a Handler that holds connections of the pool while the
// caller's functions run: at most holds() at once per batch, named what.
type holder interface {
	holds() (n int, what string)
}

// holdsOf returns how many connections h holds at once per batch, and its
// name; 0 for a handler that holds none, or that the runtime cannot count.
func holdsOf(h Handler) (int, string) {
	if x, ok := h.(holder); ok {
		return x.holds()
	}
	return 0, ""
}

// A demand is what the handler of a topic holds at once.
type demand struct {
	topic string
	what  string
	conns int
}

// fitPool checks the demands of handlers against size, the pool's, and
// returns an ErrInvalidArgument that names the numbers when they do not
// fit beside the reserve.
func fitPool(size int, demands []demand) error {
	total := 0
	var parts []string
	for _, d := range demands {
		if d.conns > 0 {
			total += d.conns
			parts = append(parts, fmt.Sprintf("%s of %q runs %d functions at once, each holding a connection", d.what, d.topic, d.conns))
		}
	}
	if size <= 0 || total == 0 || total+reserve <= size {
		return nil
	}
	slices.Sort(parts)
	return fmt.Errorf("taskproc: %s; the pool has %d: give it at least %d connections (%d for the runtime's own work), or fewer workers: %w",
		strings.Join(parts, "; "), size, total+reserve, reserve, taskapi.ErrInvalidArgument)
}

// connGate bounds how many transactions the handlers hold at once to the
// connections that the reserve leaves them; it lets every one through
// while the pool's size is unknown.
type connGate struct {
	slots atomic.Pointer[chan struct{}]
}

// size lets n transactions through at once, every one for n below one.
func (g *connGate) size(n int) {
	if n < 1 {
		g.slots.Store(nil)
		return
	}
	slots := make(chan struct{}, n)
	g.slots.Store(&slots)
}

// enter waits for a turn, or for ctx to end, and returns the function that
// gives the turn back.
func (g *connGate) enter(ctx context.Context) (func(), error) {
	slots := g.slots.Load()
	if slots == nil {
		return func() {}, nil
	}
	select {
	case *slots <- struct{}{}:
		return func() { <-*slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sizePool asks transact for its pool's size, checks the demands against
// it, and sizes gate for the handlers.
func sizePool[Tx any](ctx context.Context, transact Transact[Tx], gate *connGate, demands []demand) error {
	size := taskapi.PoolSize(ctx, transact)
	if err := fitPool(size, demands); err != nil {
		return err
	}
	gate.size(size - reserve)
	return nil
}
