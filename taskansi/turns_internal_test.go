package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestOneTurnAtATime(t *testing.T) {
	db := &sql.DB{} // a key only: takeTurn never uses it
	var in, overlaps atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 100 {
				pass, err := takeTurn(t.Context(), db)
				if err != nil {
					t.Error(err)
					return
				}
				if in.Add(1) > 1 {
					overlaps.Add(1)
				}
				in.Add(-1)
				pass()
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d turns were taken while another was held", n)
	}
}

func TestAWaiterWhoseContextEndsLeavesTheQueue(t *testing.T) {
	db := &sql.DB{}
	pass, err := takeTurn(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := takeTurn(ctx, db); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait whose context ended = %v, want DeadlineExceeded", err)
	}
	pass()
	again, err := takeTurn(t.Context(), db)
	if err != nil {
		t.Fatalf("the turn after a waiter gave up: %v", err)
	}
	again()
}
