package taskproc

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSupplementPutGet(t *testing.T) {
	var s Supplement // the zero Supplement is ready to use
	name := NewKey[string]("name")
	if v, ok := name.Get(&s); ok || v != "" {
		t.Fatalf("Get of an empty supplement: %q, %t", v, ok)
	}
	if err := name.Put(&s, "first"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	err := name.Put(&s, "second")
	if !errors.Is(err, ErrSupplementTaken) || !strings.Contains(err.Error(), `"name"`) {
		t.Errorf("second Put: %v, want ErrSupplementTaken naming the key", err)
	}
	if v, ok := name.Get(&s); !ok || v != "first" {
		t.Errorf("Get: %q, %t; want first", v, ok)
	}
	// Keys are told apart by identity: the same name is another key.
	if v, ok := NewKey[string]("name").Get(&s); ok {
		t.Errorf("another key of the same name found %q", v)
	}
}

func TestSupplementNilInterfaceValue(t *testing.T) {
	s := &Supplement{}
	key := NewKey[error]("err")
	if err := key.Put(s, nil); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if v, ok := key.Get(s); !ok || v != nil {
		t.Errorf("Get: %v, %t; want nil, true", v, ok)
	}
}

// askAtOnce calls GetOrCompute for key from n goroutines. compute does not
// return before all n have asked, so they all ask while it runs.
func askAtOnce(t *testing.T, s *Supplement, key *Key[int], n int, compute func() (int, error)) ([]int, []error, int32) {
	t.Helper()
	var asked, computed atomic.Int32
	all := make(chan struct{})
	values, errs := make([]int, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if asked.Add(1) == int32(n) {
				close(all)
			}
			values[i], errs[i] = key.GetOrCompute(s, func() (int, error) {
				computed.Add(1)
				select {
				case <-all:
				case <-time.After(compPatience):
					t.Error("not all goroutines asked")
				}
				return compute()
			})
		})
	}
	wg.Wait()
	return values, errs, computed.Load()
}

func TestSupplementGetOrComputeOnce(t *testing.T) {
	s := &Supplement{}
	key := NewKey[int]("answer")
	values, errs, computed := askAtOnce(t, s, key, 32, func() (int, error) { return 42, nil })
	if computed != 1 {
		t.Errorf("computed %d times, want once", computed)
	}
	for i := range values {
		if values[i] != 42 || errs[i] != nil {
			t.Errorf("goroutine %d: %d, %v", i, values[i], errs[i])
		}
	}
	if v, ok := key.Get(s); !ok || v != 42 {
		t.Errorf("Get: %d, %t", v, ok)
	}
	if err := key.Put(s, 7); !errors.Is(err, ErrSupplementTaken) {
		t.Errorf("Put after GetOrCompute: %v", err)
	}
}

func TestSupplementFailedComputeIsNotStored(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compute func() (int, error)
		want    string
	}{
		{"error", func() (int, error) { return 1, errors.New("no answer") }, "no answer"},
		{"panic", func() (int, error) { panic("lost") }, "panic: lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Supplement{}
			key := NewKey[int]("answer")
			// A goroutine that comes after a failed compute landed computes
			// again, so only the outcome is certain: every one fails.
			values, errs, computed := askAtOnce(t, s, key, 32, tc.compute)
			if computed < 1 || computed > 32 {
				t.Errorf("computed %d times, want between once and once per goroutine", computed)
			}
			for i := range errs {
				if values[i] != 0 || errs[i] == nil || errs[i].Error() != tc.want {
					t.Errorf("goroutine %d: %d, %v; want 0, %q", i, values[i], errs[i], tc.want)
				}
			}
			if v, ok := key.Get(s); ok {
				t.Errorf("a failed compute stored %d", v)
			}
			v, err := key.GetOrCompute(s, func() (int, error) { return 42, nil })
			if v != 42 || err != nil {
				t.Errorf("GetOrCompute after a failure: %d, %v", v, err)
			}
		})
	}
}

func TestSupplementPutDuringComputeWins(t *testing.T) {
	s := &Supplement{}
	key := NewKey[int]("answer")
	computing, put := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-computing:
			_ = key.Put(s, 1)
		case <-time.After(compPatience):
		}
		close(put)
	}()
	v, err := key.GetOrCompute(s, func() (int, error) {
		close(computing)
		<-put
		return 2, nil
	})
	if v != 1 || err != nil {
		t.Errorf("GetOrCompute: %d, %v; want the value of Put, 1", v, err)
	}
	if v, _ := key.Get(s); v != 1 {
		t.Errorf("Get: %d, want 1", v)
	}
}
