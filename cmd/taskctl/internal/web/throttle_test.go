package web

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleHoldsEveryClient sends one wrong token from each of many
// addresses: none waits on its own, but after globalLimit.free of them
// every client waits, a new one and the right token too, and the wait
// doubles up to its most; a right token after the wait ends it for all.
func TestThrottleHoldsEveryClient(t *testing.T) {
	now := time.Now()
	th := newThrottle(func() time.Time { return now })
	wrong, right := func() bool { return false }, func() bool { return true }
	for i := range globalLimit.free {
		if ok, wait := th.try(fmt.Sprintf("10.0.0.%d", i), wrong); ok || wait != 0 {
			t.Fatalf("wrong token %d: %v, %v; want compared and refused", i, ok, wait)
		}
	}
	if ok, wait := th.try("10.0.1.1", right); ok || wait != globalLimit.first {
		t.Fatalf("a new client after %d wrong tokens: %v, wait %v; want a wait of %v", globalLimit.free, ok, wait, globalLimit.first)
	}
	for want, i := 2*globalLimit.first, 0; want <= 2*globalLimit.most; want, i = 2*want, i+1 {
		now = now.Add(globalLimit.most) // past any wait, within forget
		th.try(fmt.Sprintf("10.0.2.%d", i), wrong)
		if _, wait := th.try("10.0.2.2", right); wait != min(want, globalLimit.most) {
			t.Fatalf("after a wait and a wrong token: wait %v, want %v", wait, min(want, globalLimit.most))
		}
	}
	now = now.Add(globalLimit.most)
	if ok, _ := th.try("10.0.3.1", right); !ok {
		t.Fatalf("the right token after the wait was refused")
	}
	if ok, wait := th.try("10.0.3.2", wrong); ok || wait != 0 {
		t.Errorf("after the right token, a wrong one: %v, wait %v; want compared", ok, wait)
	}
}

// TestThrottleForgets lets a client's strikes age: wrong tokens spread
// wider than clientLimit.forget never make it wait.
func TestThrottleForgets(t *testing.T) {
	now := time.Now()
	th := newThrottle(func() time.Time { return now })
	for i := range 3 * clientLimit.free {
		if _, wait := th.try("10.0.0.1", func() bool { return false }); wait != 0 {
			t.Fatalf("wrong token %d, %v after the previous one: wait %v", i, clientLimit.forget, wait)
		}
		now = now.Add(clientLimit.forget)
	}
}
